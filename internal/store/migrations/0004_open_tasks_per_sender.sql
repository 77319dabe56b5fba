-- 0004: post_task counts a sender's open tasks (the per-sender cap); this
-- index keeps that count a short range scan however many finished tasks
-- the sender has.
CREATE INDEX tasks_sender_status ON tasks (sender_slug, status);
