-- 0013: relays admit each other, and a remote name is never a local one.

-- Each relay seen: its name, its pinned key and whether the operator trusts
-- it. A relay seen first is pending; nothing it sends reaches an agent until
-- it is trusted. new_key is a key the directory now shows that differs from
-- the pinned one (the relay went back to pending because of it).
ALTER TABLE mesh_relays ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE mesh_relays ADD COLUMN state TEXT NOT NULL DEFAULT 'pending' CHECK (state = 'pending' OR state = 'trusted' OR state = 'blocked');
ALTER TABLE mesh_relays ADD COLUMN new_key TEXT;
ALTER TABLE mesh_relays ADD COLUMN changed_at TEXT;

-- Envelopes kept but not applied: from a relay not trusted (yet), or of a
-- newer envelope version than this build reads. They are applied in order
-- when the relay is trusted (or after an upgrade); a blocked relay's stay.
CREATE TABLE mesh_held (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id         TEXT NOT NULL UNIQUE,
    from_relay     TEXT NOT NULL,
    reason         TEXT NOT NULL,
    task_id        TEXT NOT NULL DEFAULT '',
    title          TEXT NOT NULL DEFAULT '',
    sender_slug    TEXT NOT NULL DEFAULT '',
    recipient_slug TEXT NOT NULL DEFAULT '',
    data           BLOB NOT NULL,
    received_at    TEXT NOT NULL
);

CREATE INDEX mesh_held_from ON mesh_held (from_relay, seq);

-- The other relay of each task that crosses relays, fixed when the task is
-- first stored: for a task posted here to a remote agent, the relay that
-- owns it (side owner: only it sends state); for a task a remote agent
-- posted here, the relay that sent it (side sender: only it cancels,
-- requeues or asks for changes).
CREATE TABLE mesh_task_peers (
    task_id  TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    relay_id TEXT NOT NULL,
    side     TEXT NOT NULL CHECK (side = 'sender' OR side = 'owner')
);

INSERT OR IGNORE INTO mesh_task_peers (task_id, relay_id, side)
SELECT t.id, m.relay_id, 'owner' FROM tasks t JOIN mesh_agents m ON m.slug = t.recipient_slug;
INSERT OR IGNORE INTO mesh_task_peers (task_id, relay_id, side)
SELECT t.id, m.relay_id, 'sender' FROM tasks t JOIN mesh_agents m ON m.slug = t.sender_slug;

-- A task posted here to a remote agent goes to the relay that owns it, which
-- is recorded as the task's owner.
DROP TRIGGER mesh_task_posted;
CREATE TRIGGER mesh_task_posted AFTER INSERT ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.sender_slug)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    VALUES (lower(hex(randomblob(16))), (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug), NEW.id, NEW.updated_at);
    INSERT OR IGNORE INTO mesh_task_peers (task_id, relay_id, side)
    VALUES (NEW.id, (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug), 'owner');
END;

-- A task's new state goes back to the relay that sent it, found from the
-- task (its peer), not by looking the sender's slug up.
DROP TRIGGER mesh_task_changed;
CREATE TRIGGER mesh_task_changed AFTER UPDATE ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_task_peers WHERE task_id = NEW.id AND side = 'sender')
 AND NOT EXISTS (SELECT 1 FROM mesh_outbox WHERE task_id = NEW.id AND event_type IS NULL)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    VALUES (lower(hex(randomblob(16))), (SELECT relay_id FROM mesh_task_peers WHERE task_id = NEW.id), NEW.id, NEW.updated_at);
END;

-- A journal entry for a remote agent goes to the other relay of its task
-- (its relay in the directory for a task that never crossed).
DROP TRIGGER mesh_event;
CREATE TRIGGER mesh_event AFTER INSERT ON events
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, event_recipient, event_type, event_summary, event_created_at, created_at)
    VALUES (lower(hex(randomblob(16))),
            COALESCE((SELECT relay_id FROM mesh_task_peers WHERE task_id = NEW.task_id),
                     (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug)),
            NEW.task_id, NEW.recipient_slug, NEW.type, NEW.summary, NEW.created_at, NEW.created_at);
END;
