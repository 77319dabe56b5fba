-- 0017: a push row carries the sessions it is for, so a live session's
-- stream is filtered by the row alone, not by the task, which is pruned
-- after the retention time while push rows are trimmed by count (a pruned
-- task's updates reached every session of the agent).
--
-- Each column says what the row's agent is to the task:
--   reply_session:  the agent sent the task; the sender's live session it
--                   was posted through, '' for none (every session).
--   target_session: the agent is the task's recipient; the session the
--                   task is meant for, '' for none (every session).
-- NULL when the agent is not that side of the task. A 'task' row is the
-- recipient's only, so it has no reply_session. A row with both NULL (its
-- task was gone when this ran, or a journal event without a task) reaches
-- every session.
ALTER TABLE push_events ADD COLUMN reply_session TEXT;
ALTER TABLE push_events ADD COLUMN target_session TEXT;

UPDATE push_events SET
    reply_session = CASE WHEN kind <> 'task' THEN
        (SELECT CASE WHEN sender_slug = push_events.agent_slug THEN COALESCE(reply_session, '') END
         FROM tasks WHERE id = push_events.task_id) END,
    target_session = (SELECT CASE WHEN recipient_slug = push_events.agent_slug THEN COALESCE(target_session, '') END
        FROM tasks WHERE id = push_events.task_id);

DROP TRIGGER push_task;
CREATE TRIGGER push_task AFTER INSERT ON tasks
WHEN EXISTS (SELECT 1 FROM push_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at, target_session)
    VALUES (NEW.recipient_slug, 'task', NEW.id, NEW.title, NEW.sender_slug, NEW.priority,
            substr(NEW.instructions, 1, 4000), NEW.created_at, COALESCE(NEW.target_session, ''));
END;

DROP TRIGGER push_event;
CREATE TRIGGER push_event AFTER INSERT ON events
WHEN EXISTS (SELECT 1 FROM push_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at,
                             reply_session, target_session)
    VALUES (NEW.recipient_slug, NEW.type, NEW.task_id,
            COALESCE((SELECT title FROM tasks WHERE id = NEW.task_id), ''),
            COALESCE((SELECT CASE WHEN sender_slug = NEW.recipient_slug THEN recipient_slug ELSE sender_slug END
                      FROM tasks WHERE id = NEW.task_id), ''),
            COALESCE((SELECT priority FROM tasks WHERE id = NEW.task_id), 0),
            NEW.summary, NEW.created_at,
            (SELECT CASE WHEN sender_slug = NEW.recipient_slug THEN COALESCE(reply_session, '') END
             FROM tasks WHERE id = NEW.task_id),
            (SELECT CASE WHEN recipient_slug = NEW.recipient_slug THEN COALESCE(target_session, '') END
             FROM tasks WHERE id = NEW.task_id));
END;
