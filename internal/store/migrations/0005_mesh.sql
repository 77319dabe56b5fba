-- 0005: the mesh (federation over NATS JetStream). Without --nats these
-- tables stay empty and the triggers never fire.

-- Placeholders of agents another relay owns: each also has a row in agents
-- (kind agent, no token), so tasks can name them like any agent.
CREATE TABLE mesh_agents (
    slug       TEXT PRIMARY KEY REFERENCES agents(slug) ON DELETE CASCADE,
    relay_id   TEXT NOT NULL,
    relay_name TEXT NOT NULL
);

-- The transactional outbox: a change that must leave for another relay,
-- written in the transaction that made it. The task's state is read when
-- the row is published; the journal entry it carries is copied here.
CREATE TABLE mesh_outbox (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id           TEXT NOT NULL UNIQUE,
    to_relay         TEXT NOT NULL,
    task_id          TEXT NOT NULL,
    event_recipient  TEXT,
    event_type       TEXT,
    event_summary    TEXT,
    event_created_at TEXT,
    created_at       TEXT NOT NULL
);

CREATE INDEX mesh_outbox_task ON mesh_outbox (task_id);

-- Messages already applied, by the sender's de-duplication id.
CREATE TABLE mesh_applied (
    msg_id     TEXT PRIMARY KEY,
    from_relay TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    mark       TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

CREATE INDEX mesh_applied_at ON mesh_applied (applied_at);

-- Tasks another relay told this one about: which relay, and the signature
-- mark of the latest message about it.
CREATE TABLE mesh_tasks (
    task_id  TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    relay_id TEXT NOT NULL,
    mark     TEXT NOT NULL CHECK (mark IN ('verified', 'unverified', 'mismatch'))
);

-- The first public key seen for each relay; a different key later is a mismatch.
CREATE TABLE mesh_relays (
    relay_id   TEXT PRIMARY KEY,
    public_key TEXT NOT NULL,
    first_seen TEXT NOT NULL
);

-- A task posted here to a remote agent goes to the relay that owns it.
CREATE TRIGGER mesh_task_posted AFTER INSERT ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.sender_slug)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    SELECT lower(hex(randomblob(16))), relay_id, NEW.id, NEW.updated_at FROM mesh_agents WHERE slug = NEW.recipient_slug;
END;

-- A task owned here for a remote sender: its new state goes back to the
-- sender's relay (one pending row per task is enough: the state is read at
-- publish time).
CREATE TRIGGER mesh_task_changed AFTER UPDATE ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.sender_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_outbox WHERE task_id = NEW.id AND event_type IS NULL)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    SELECT lower(hex(randomblob(16))), relay_id, NEW.id, NEW.updated_at FROM mesh_agents WHERE slug = NEW.sender_slug;
END;

-- A journal entry for a remote agent goes to its relay: updates for a remote
-- sender, and a local sender's actions (cancel, requeue, request changes)
-- for a remote recipient's relay, which owns the task.
CREATE TRIGGER mesh_event AFTER INSERT ON events
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, event_recipient, event_type, event_summary, event_created_at, created_at)
    SELECT lower(hex(randomblob(16))), relay_id, NEW.task_id, NEW.recipient_slug, NEW.type, NEW.summary, NEW.created_at, NEW.created_at
    FROM mesh_agents WHERE slug = NEW.recipient_slug;
END;
