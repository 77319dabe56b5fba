-- 0025: which relay a conversation whose first task is not here belongs
-- to. A relay's task joins such a conversation only if it is that relay's:
-- the conversation started on another relay and came here with its tasks,
-- or started with its task here, since pruned while a hand-off of it is
-- kept. Before, the owner was worked out from the conversation's tasks on
-- every arriving task (a walk of them all), and was lost with the tasks
-- the relay sent.
CREATE TABLE mesh_conversations (
    conversation_id TEXT PRIMARY KEY,
    relay_id        TEXT NOT NULL
) WITHOUT ROWID;

-- The conversations whose tasks here came from one relay alone (with the
-- hand-offs made of them), their first task not here: the rule until now.
INSERT INTO mesh_conversations (conversation_id, relay_id)
SELECT c.conversation_id, MIN(p.relay_id)
FROM tasks c LEFT JOIN mesh_task_peers p ON p.task_id = c.id AND p.side = 'sender'
WHERE c.conversation_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks r WHERE r.id = c.conversation_id)
GROUP BY c.conversation_id
HAVING COUNT(DISTINCT p.relay_id) = 1;
