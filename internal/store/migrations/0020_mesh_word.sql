-- 0020: the mesh keeps its word. A remote agent's name here is pinned to
-- its relay and its slug there; a rename of a trusted relay waits for the
-- operator; message ids and task ids are their origin relay's.

-- Each placeholder of a remote agent names (relay_id, remote_slug): a name
-- is never moved to another relay or slug by what the directory shows.
ALTER TABLE mesh_agents ADD COLUMN remote_slug TEXT NOT NULL DEFAULT '';
UPDATE mesh_agents SET remote_slug = CASE WHEN instr(slug, '@') > 0 THEN substr(slug, 1, instr(slug, '@') - 1) ELSE slug END;
CREATE INDEX mesh_agents_remote ON mesh_agents (relay_id, remote_slug);

-- A trusted relay that shows another name is pending until the operator
-- trusts it again; new_name is the name it shows meanwhile.
ALTER TABLE mesh_relays ADD COLUMN new_name TEXT;

-- Messages applied, by their sender relay and its id.
CREATE TABLE mesh_applied_scoped (
    from_relay TEXT NOT NULL,
    msg_id     TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    mark       TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    PRIMARY KEY (from_relay, msg_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO mesh_applied_scoped (from_relay, msg_id, task_id, mark, applied_at)
SELECT from_relay, msg_id, task_id, mark, applied_at FROM mesh_applied;
DROP TABLE mesh_applied;
ALTER TABLE mesh_applied_scoped RENAME TO mesh_applied;
CREATE INDEX mesh_applied_at ON mesh_applied (applied_at);

-- Envelopes held, unique by their sender relay and its id (seq keeps the
-- order they arrived in).
CREATE TABLE mesh_held_scoped (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id         TEXT NOT NULL,
    from_relay     TEXT NOT NULL,
    reason         TEXT NOT NULL,
    task_id        TEXT NOT NULL DEFAULT '',
    title          TEXT NOT NULL DEFAULT '',
    sender_slug    TEXT NOT NULL DEFAULT '',
    recipient_slug TEXT NOT NULL DEFAULT '',
    data           BLOB NOT NULL,
    received_at    TEXT NOT NULL,
    UNIQUE (from_relay, msg_id)
);
INSERT INTO mesh_held_scoped (seq, msg_id, from_relay, reason, task_id, title, sender_slug, recipient_slug, data, received_at)
SELECT seq, msg_id, from_relay, reason, task_id, title, sender_slug, recipient_slug, data, received_at FROM mesh_held ORDER BY seq;
DROP TABLE mesh_held;
ALTER TABLE mesh_held_scoped RENAME TO mesh_held;
CREATE INDEX mesh_held_from ON mesh_held (from_relay, seq);

-- The id the other relay of a task knows it by: the task's id here, except
-- for a task another relay sent whose id was taken here (it is stored under
-- an id of this relay's).
ALTER TABLE mesh_task_peers ADD COLUMN remote_id TEXT NOT NULL DEFAULT '';
UPDATE mesh_task_peers SET remote_id = task_id;
CREATE UNIQUE INDEX mesh_task_peers_remote ON mesh_task_peers (relay_id, remote_id);

DROP TRIGGER mesh_task_posted;
CREATE TRIGGER mesh_task_posted AFTER INSERT ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.recipient_slug)
 AND NOT EXISTS (SELECT 1 FROM mesh_agents WHERE slug = NEW.sender_slug)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    VALUES (lower(hex(randomblob(16))), (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug), NEW.id, NEW.updated_at);
    INSERT OR IGNORE INTO mesh_task_peers (task_id, relay_id, side, remote_id)
    VALUES (NEW.id, (SELECT relay_id FROM mesh_agents WHERE slug = NEW.recipient_slug), 'owner', NEW.id);
END;

-- A task's new state goes back to the relay that sent it when its state
-- changes (every such change sets updated_at), not when only a name in it
-- does (a plain name given to another relay renames placeholders).
DROP TRIGGER mesh_task_changed;
CREATE TRIGGER mesh_task_changed AFTER UPDATE OF status, updated_at ON tasks
WHEN EXISTS (SELECT 1 FROM mesh_task_peers WHERE task_id = NEW.id AND side = 'sender')
 AND NOT EXISTS (SELECT 1 FROM mesh_outbox WHERE task_id = NEW.id AND event_type IS NULL)
BEGIN
    INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
    VALUES (lower(hex(randomblob(16))), (SELECT relay_id FROM mesh_task_peers WHERE task_id = NEW.id), NEW.id, NEW.updated_at);
END;
