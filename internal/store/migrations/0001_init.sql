-- 0001: agents, tasks, reports, the update journal, invites, run tokens and settings.

CREATE TABLE invites (
    id           TEXT PRIMARY KEY,
    code_hash    TEXT NOT NULL UNIQUE,
    label        TEXT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    max_uses     INTEGER,
    uses         INTEGER NOT NULL DEFAULT 0,
    revoked      INTEGER NOT NULL DEFAULT 0,
    display_name TEXT,
    role         TEXT,
    first_task   TEXT
);

CREATE TABLE agents (
    slug                TEXT PRIMARY KEY,
    kind                TEXT NOT NULL DEFAULT 'agent' CHECK (kind IN ('agent', 'human')),
    display_name        TEXT NOT NULL,
    model_slug          TEXT NOT NULL,
    capabilities        TEXT NOT NULL,
    details             TEXT,
    registered_at       TEXT NOT NULL,
    last_seen_at        TEXT NOT NULL,
    last_read_sequence  INTEGER NOT NULL DEFAULT 0,
    token_hash          TEXT UNIQUE,
    invite_id           TEXT REFERENCES invites(id) ON DELETE SET NULL,
    display_name_locked INTEGER NOT NULL DEFAULT 0,
    details_locked      INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX agents_invite ON agents (invite_id);

CREATE TABLE tasks (
    id                    TEXT PRIMARY KEY,
    sender_slug           TEXT NOT NULL,
    recipient_slug        TEXT NOT NULL,
    title                 TEXT NOT NULL,
    instructions          TEXT NOT NULL,
    required_capabilities TEXT NOT NULL DEFAULT '[]',
    priority              INTEGER NOT NULL DEFAULT 2 CHECK (priority IN (1, 2, 3)),
    status                TEXT NOT NULL CHECK (status IN ('queued', 'claimed', 'blocked', 'completed', 'cancelled')),
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL,
    claimed_at            TEXT,
    lease_expires_at      TEXT,
    parent_task_id        TEXT REFERENCES tasks(id) ON DELETE SET NULL,
    depth                 INTEGER NOT NULL DEFAULT 0,
    claimed_via           TEXT CHECK (claimed_via IN ('worker', 'chat'))
);

CREATE INDEX tasks_queue ON tasks (recipient_slug, status, priority DESC, created_at);
CREATE INDEX tasks_status_updated ON tasks (status, updated_at);
CREATE INDEX tasks_sender ON tasks (sender_slug, updated_at);
CREATE INDEX tasks_parent ON tasks (parent_task_id);

CREATE TABLE reports (
    id         TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('progress', 'completed', 'blocked', 'changes')),
    message    TEXT NOT NULL,
    result     TEXT,
    created_at TEXT NOT NULL
);

CREATE INDEX reports_task ON reports (task_id);

-- AUTOINCREMENT keeps sequences strictly increasing even if the newest
-- events were ever deleted, so a cursor never sees a sequence twice.
CREATE TABLE events (
    sequence       INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient_slug TEXT NOT NULL,
    type           TEXT NOT NULL,
    task_id        TEXT NOT NULL,
    summary        TEXT NOT NULL,
    created_at     TEXT NOT NULL
);

CREATE INDEX events_recipient ON events (recipient_slug, sequence);

CREATE TABLE run_tokens (
    token_hash TEXT PRIMARY KEY,
    agent_slug TEXT NOT NULL REFERENCES agents(slug) ON DELETE CASCADE,
    task_id    TEXT,
    expires_at TEXT NOT NULL
);

CREATE INDEX run_tokens_task ON run_tokens (task_id);
CREATE INDEX run_tokens_agent ON run_tokens (agent_slug);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
