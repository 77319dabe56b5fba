-- 0021: indexes for the dashboard's charts (store/insights.go). Each is
-- keyed on what never changes once written, so a task's lifecycle does not
-- move its entries (see 0011): a task's posting time, an outcome report's
-- time, a hand-off's conversation.

-- Tasks posted in a window: throughput per hour, latencies per agent.
CREATE INDEX tasks_created ON tasks (created_at);
-- Completed and blocked reports in a window: throughput, outcomes per
-- agent, its kind in it so that these counts need not read the reports.
-- Progress and change requests, most reports, are left out.
CREATE INDEX reports_outcomes ON reports (created_at, kind)
WHERE kind = 'completed' OR kind = 'blocked';
-- The tasks of one conversation (a hand-off's conversation_id; the task
-- that started it has none and is found by its id).
CREATE INDEX tasks_conversation ON tasks (conversation_id)
WHERE conversation_id IS NOT NULL;
