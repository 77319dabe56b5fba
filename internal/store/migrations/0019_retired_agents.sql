-- A retired agent (crosschat-relay projects remove, or a project folder
-- moved to another id): its token is gone, it is left out of every agent
-- list and gets no new tasks, and it keeps its name, so nobody else can
-- enroll or register under it and read the replies to its tasks, which are
-- kept. NULL: not retired. Reinstated with a new token by register.
ALTER TABLE agents ADD COLUMN retired_at TEXT;
