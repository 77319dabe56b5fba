-- 0023: the mesh keeps each task's order rather than one global order, so
-- messages about different tasks travel side by side. Each message one
-- relay sends another about a task is numbered (per task, from 1, in the
-- order the rows were written); the receiving relay applies a task's
-- messages in that order whatever order they arrive in.

-- out_seq: the number given to the last message to the task's other relay;
-- in_seq: the number of the last message applied from it (0: none yet;
-- -1: unknown, for a task that crossed before this version, whose next
-- number is taken as it comes).
ALTER TABLE mesh_task_peers ADD COLUMN out_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mesh_task_peers ADD COLUMN in_seq INTEGER NOT NULL DEFAULT 0;
UPDATE mesh_task_peers SET in_seq = -1;

-- The number an outbox row carries (0: a row written before this version,
-- or for a task with no other relay recorded).
ALTER TABLE mesh_outbox ADD COLUMN task_seq INTEGER NOT NULL DEFAULT 0;

-- Every row for a task's other relay takes the task's next number, whatever
-- wrote it (a trigger below, or the store applying a remote change).
CREATE TRIGGER mesh_outbox_numbered AFTER INSERT ON mesh_outbox
WHEN EXISTS (SELECT 1 FROM mesh_task_peers WHERE task_id = NEW.task_id AND relay_id = NEW.to_relay)
BEGIN
    UPDATE mesh_task_peers SET out_seq = out_seq + 1 WHERE task_id = NEW.task_id;
    UPDATE mesh_outbox SET task_seq = (SELECT out_seq FROM mesh_task_peers WHERE task_id = NEW.task_id) WHERE seq = NEW.seq;
END;

-- A task posted to a remote agent records its other relay before its first
-- row, so that row is number 1.
DROP TRIGGER mesh_task_posted;
CREATE TRIGGER mesh_task_posted AFTER INSERT ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.sender_slug)
BEGIN
    INSERT OR IGNORE INTO mesh_task_peers (task_id, relay_id, side, remote_id)
    VALUES (NEW.id, (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug), 'owner', NEW.id);
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    VALUES (lower(hex(randomblob(16))), (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug), NEW.id, NEW.updated_at);
END;
