-- 0002: workers (an agent's CLI run unattended for its tasks), the live
-- activity of their runs and the CLI sessions a later round resumes.

-- JSON columns hold arrays of strings. created_at survives every save.
CREATE TABLE workers (
    agent_slug      TEXT PRIMARY KEY REFERENCES agents(slug) ON DELETE CASCADE,
    harness         TEXT NOT NULL,
    command         TEXT NOT NULL,
    args            TEXT NOT NULL DEFAULT '[]',
    prompt_mode     TEXT NOT NULL DEFAULT 'stdin' CHECK (prompt_mode IN ('stdin', 'file', 'argument')),
    workdir         TEXT NOT NULL,
    extra_dirs      TEXT NOT NULL DEFAULT '[]',
    allowed_senders TEXT NOT NULL DEFAULT '[]',
    timeout_minutes INTEGER NOT NULL DEFAULT 30,
    runs_per_hour   INTEGER NOT NULL DEFAULT 20,
    exclusive       INTEGER NOT NULL DEFAULT 0,
    enabled         INTEGER NOT NULL DEFAULT 1,
    env             TEXT NOT NULL DEFAULT '[]',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);

-- One row per step of a task's runs, numbered per task from 1. files is a
-- JSON array of ChangedFile (NULL when the step lists none). The primary
-- key also serves the cascade from tasks.
CREATE TABLE task_activity (
    task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    at      TEXT NOT NULL,
    kind    TEXT NOT NULL,
    text    TEXT NOT NULL,
    detail  TEXT,
    status  TEXT,
    ref     TEXT,
    files   TEXT,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;

CREATE TABLE run_sessions (
    task_id    TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    harness    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    workdir    TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
