-- 0011: task indexes whose entries stay put while a task moves through its
-- lifecycle, and a journal without an index by recipient. Every index entry
-- keyed on a value that changes with a task's status or updated_at is
-- deleted and written again on each change, on a page of its own for every
-- agent, and each changed page is written whole to the WAL and synced.
-- Entries keyed on what never changes (who sent a task, who it is for) are
-- written once; the ones only open or queued tasks need are kept for those
-- alone, in small indexes that stay in a page or two.
DROP INDEX tasks_queue;
DROP INDEX tasks_sender;
DROP INDEX tasks_sender_status;
DROP INDEX tasks_parent;

-- claim_next_task: the recipient's queued tasks in claim order.
CREATE INDEX tasks_queue ON tasks (recipient_slug, priority DESC, created_at) WHERE status = 'queued';
-- Claimed tasks whose lease has run out, checked for the recipient on
-- every claim.
CREATE INDEX tasks_leases ON tasks (recipient_slug, lease_expires_at) WHERE status = 'claimed';
-- The open-task cap per sender.
CREATE INDEX tasks_sender_open ON tasks (sender_slug) WHERE status IN ('queued', 'claimed', 'blocked');
-- Lists of one agent's tasks, sent or received.
CREATE INDEX tasks_sender ON tasks (sender_slug);
CREATE INDEX tasks_recipient ON tasks (recipient_slug);
-- Hand-offs of a task, and ON DELETE SET NULL when a parent goes.
CREATE INDEX tasks_parent ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;

-- Each journal event wrote a page of this index of its own (one run of
-- entries per agent). read_updates walks the journal after the agent's
-- cursor instead (events.go).
DROP INDEX events_recipient;
