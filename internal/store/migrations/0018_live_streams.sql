-- 0018: when a live session's push stream (its channel or `monitor
-- --session`) was last seen open. last_seen also counts posts through the
-- session and is kept 7 days for resolving names; only a stream delivers a
-- task, so only stream_seen, within relay.LiveStreamWindow, makes a session
-- live for delivery: the agent's unbound workers and sessionless claims
-- leave the tasks aimed at it (docs/live-sessions.md). NULL: never seen.
ALTER TABLE live_sessions ADD COLUMN stream_seen TEXT;
