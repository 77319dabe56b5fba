-- 0015: exact sessions. any_session lets a Claude Code or Codex worker
-- resume any session of its CLI that a task names; run_sessions keeps the
-- request token of a turn delivered into a session while it runs, with the
-- claim it belongs to, so a turn interrupted by a restart is recovered
-- from the transcript instead of being sent again.
ALTER TABLE workers ADD COLUMN any_session INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_sessions ADD COLUMN request_token TEXT NOT NULL DEFAULT '';
ALTER TABLE run_sessions ADD COLUMN request_claimed_at TEXT NOT NULL DEFAULT '';
