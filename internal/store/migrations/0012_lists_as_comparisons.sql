-- 0012: no list of three values or more in what every write evaluates.
-- SQLite runs `x IN (a, b, c)` by filling a temporary table with the list,
-- with a page cache of its own, each time the statement runs, and throws it
-- away after: posting a task built three of them (two CHECK constraints and
-- the open-task index's condition), each claim and completion four, every
-- report one. Chains of comparisons build nothing (docs/performance.md,
-- thirteenth session). A list of two is compared value by value already.
--
-- The CHECK constraints of tasks, reports, workers and mesh_tasks say the
-- same as chains; Go rewrites them in place after this file (checks.go).

-- The open-task cap's index, its condition as countOpenSQL spells it.
DROP INDEX tasks_sender_open;
CREATE INDEX tasks_sender_open ON tasks (sender_slug)
WHERE status = 'queued' OR status = 'claimed' OR status = 'blocked';

-- A followed agent's event: INSERT … SELECT into a table with a trigger of
-- its own (push_trim) copies the rows into a temporary table first; INSERT
-- … VALUES with a lookup per column does not.
DROP TRIGGER push_event;
CREATE TRIGGER push_event AFTER INSERT ON events
WHEN EXISTS (SELECT 1 FROM push_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at)
    VALUES (NEW.recipient_slug, NEW.type, NEW.task_id,
            COALESCE((SELECT title FROM tasks WHERE id = NEW.task_id), ''),
            COALESCE((SELECT CASE WHEN sender_slug = NEW.recipient_slug THEN recipient_slug ELSE sender_slug END
                      FROM tasks WHERE id = NEW.task_id), ''),
            COALESCE((SELECT priority FROM tasks WHERE id = NEW.task_id), 0),
            NEW.summary, NEW.created_at);
END;

-- A remote sender's task changed: the condition reads mesh_outbox, and an
-- INSERT … SELECT into a table the program has read already goes through a
-- temporary table too. The sender has exactly one row in mesh_agents (the
-- condition says so), so one lookup gives its relay.
DROP TRIGGER mesh_task_changed;
CREATE TRIGGER mesh_task_changed AFTER UPDATE ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.sender_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_outbox WHERE task_id = NEW.id AND event_type IS NULL)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    VALUES (lower(hex(randomblob(16))), (SELECT relay_id FROM mesh_agents WHERE slug = NEW.sender_slug),
            NEW.id, NEW.updated_at);
END;
