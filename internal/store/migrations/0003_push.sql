-- 0003: the push stream. One row per task queued for an agent and per journal
-- event addressed to an agent, written by triggers in the same transaction as
-- the task or event, so a stream resuming from a cursor never loses or
-- repeats one, across restarts. AUTOINCREMENT: sequences never come back.

CREATE TABLE push_events (
    sequence   INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_slug TEXT NOT NULL,
    kind       TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    title      TEXT NOT NULL,
    from_slug  TEXT NOT NULL,
    priority   INTEGER NOT NULL DEFAULT 0,
    message    TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE INDEX push_events_agent ON push_events (agent_slug, sequence);

CREATE TRIGGER push_task AFTER INSERT ON tasks BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at)
    VALUES (NEW.recipient_slug, 'task', NEW.id, NEW.title, NEW.sender_slug, NEW.priority,
            substr(NEW.instructions, 1, 4000), NEW.created_at);
END;

-- A requeue with changes asked for puts the task back in the recipient's queue:
-- that is covered by its journal event (task-requeued) addressed to the recipient.
CREATE TRIGGER push_event AFTER INSERT ON events BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at)
    SELECT NEW.recipient_slug, NEW.type, NEW.task_id, COALESCE(t.title, ''),
           COALESCE(CASE WHEN t.sender_slug = NEW.recipient_slug THEN t.recipient_slug ELSE t.sender_slug END, ''),
           COALESCE(t.priority, 0), NEW.summary, NEW.created_at
    FROM (SELECT 1) LEFT JOIN tasks t ON t.id = NEW.task_id;
END;

-- Keep the newest 20,000 rows (relay.DefaultMaxPushEvents).
CREATE TRIGGER push_trim AFTER INSERT ON push_events BEGIN
    DELETE FROM push_events WHERE sequence <= NEW.sequence - 20000;
END;
