-- 0024: a retired agent runs nothing (RetireAgent turns its worker off and
-- deletes its run tokens). Agents retired before this version kept both: a
-- task requeued to one was run by its worker, and a run going on at the
-- retirement could still act as the agent.
UPDATE workers SET enabled = 0
    WHERE agent_slug IN (SELECT slug FROM agents WHERE retired_at IS NOT NULL);
DELETE FROM run_tokens
    WHERE agent_slug IN (SELECT slug FROM agents WHERE retired_at IS NOT NULL);
