-- 0006: session workers. A worker bound to an existing Claude Code session
-- or Codex thread delivers each task into it by resuming it. session_ref is
-- what a person named (id or exact name); session_id what it resolved to
-- when the worker was saved; session_label its name or title then.
ALTER TABLE workers ADD COLUMN session_ref   TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN session_id    TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN session_label TEXT NOT NULL DEFAULT '';
