-- 0009: push rows are written only for agents whose push stream is followed.
-- Every task queued and every journal event wrote a push row (a table row, an
-- index entry and an AUTOINCREMENT counter update) whether or not anyone
-- would ever read it: about a seventh of a lifecycle's SQLite time for agents
-- without a live session. An agent's stream is followed from the moment it
-- is first opened (OpenPush); since is the newest push sequence then, so a
-- cursor older than since may have missed rows and is told so.
CREATE TABLE push_agents (
    slug  TEXT PRIMARY KEY REFERENCES agents(slug) ON DELETE CASCADE,
    since INTEGER NOT NULL
) WITHOUT ROWID;

-- Every agent known before this version had all its rows written, and a
-- client may hold a cursor into them: they stay followed from the start.
INSERT INTO push_agents (slug, since) SELECT slug, 0 FROM agents;

DROP TRIGGER push_task;

CREATE TRIGGER push_task AFTER INSERT ON tasks
WHEN EXISTS (SELECT 1 FROM push_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at)
    VALUES (NEW.recipient_slug, 'task', NEW.id, NEW.title, NEW.sender_slug, NEW.priority,
            substr(NEW.instructions, 1, 4000), NEW.created_at);
END;

DROP TRIGGER push_event;

CREATE TRIGGER push_event AFTER INSERT ON events
WHEN EXISTS (SELECT 1 FROM push_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, priority, message, created_at)
    SELECT NEW.recipient_slug, NEW.type, NEW.task_id, COALESCE(t.title, ''),
           COALESCE(CASE WHEN t.sender_slug = NEW.recipient_slug THEN t.recipient_slug ELSE t.sender_slug END, ''),
           COALESCE(t.priority, 0), NEW.summary, NEW.created_at
    FROM (SELECT 1) LEFT JOIN tasks t ON t.id = NEW.task_id;
END;
