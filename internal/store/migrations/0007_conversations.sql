-- 0007: conversations. A task belongs to the conversation its first task
-- started: conversation_id is that task's id, NULL on the first task itself
-- (read as the task's own id). hops counts the hand-offs from that first
-- task, across agents and sessions; the hand-off limit bounds it.
-- target_session names the recipient's session a task is meant for.
-- Existing rows are filled in by backfillConversations (store/conversation.go)
-- in this migration's transaction: parents' conversations, hops = depth.
ALTER TABLE tasks ADD COLUMN conversation_id TEXT;
ALTER TABLE tasks ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN target_session TEXT;
