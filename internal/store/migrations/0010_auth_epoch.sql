-- 0010: a counter that moves whenever what a token or a worker setting
-- resolves to may have changed, so that the relay can keep what it last
-- read of them in memory (authcache.go) instead of reading the database on
-- every request. The writer reads it in every transaction it commits; any
-- other value than the last it saw empties the cache. A new token or agent
-- needs no bump (an unknown token is never kept), so only the changes that
-- can make a kept answer wrong move it.
CREATE TABLE auth_epoch (n INTEGER NOT NULL);

INSERT INTO auth_epoch (n) VALUES (0);

CREATE TRIGGER auth_agent_token AFTER UPDATE OF token_hash, slug ON agents
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;

CREATE TRIGGER auth_agent_gone AFTER DELETE ON agents
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;

CREATE TRIGGER auth_run_token_changed AFTER UPDATE ON run_tokens
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;

CREATE TRIGGER auth_run_token_gone AFTER DELETE ON run_tokens
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;

CREATE TRIGGER auth_worker_added AFTER INSERT ON workers
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;

CREATE TRIGGER auth_worker_changed AFTER UPDATE ON workers
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;

CREATE TRIGGER auth_worker_gone AFTER DELETE ON workers
BEGIN
    UPDATE auth_epoch SET n = n + 1;
END;
