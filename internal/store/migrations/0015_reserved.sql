-- 0015: reserved for a branch developed at the same time (issue 35); this
-- placeholder keeps the versions contiguous on this branch and is replaced
-- by that branch's 0015 when both are merged.
SELECT 1;
