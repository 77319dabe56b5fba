-- 0016: live sessions (docs/live-sessions.md). An agent-CLI session that
-- connects through `crosschat-relay channel` or `monitor --session` names
-- itself (its CLI's session id, and its name when known); the relay keeps
-- the sessions it heard from per agent, most recently seen first.
CREATE TABLE live_sessions (
    agent_slug TEXT NOT NULL REFERENCES agents(slug) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    last_seen  TEXT NOT NULL,
    PRIMARY KEY (agent_slug, session_id)
) WITHOUT ROWID;

-- reply_session: the sender's live session a task was posted through; the
-- task's updates reach that session's push stream only.
-- claim_session: the recipient's live session that claimed it; a post from
-- that session while the task is claimed continues its conversation.
ALTER TABLE tasks ADD COLUMN reply_session TEXT;
ALTER TABLE tasks ADD COLUMN claim_session TEXT;

CREATE INDEX tasks_claim_session ON tasks (recipient_slug, claim_session, claimed_at)
    WHERE status = 'claimed' AND claim_session IS NOT NULL;
