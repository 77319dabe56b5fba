-- 0022 (the lead gave 0021, which the charts took first): a worker's
-- paths pinned when it is saved, and whether its runs may edit git hooks
-- and CLI settings.
-- pinned_paths is a JSON object: each working folder, extra
-- folder and allowed path as configured → where it led (every symbolic
-- link followed) when the worker was saved; a run whose path leads
-- elsewhere now is refused. '{}' for workers saved before: the relay pins
-- them at its next start.
ALTER TABLE workers ADD COLUMN pinned_paths TEXT NOT NULL DEFAULT '{}';
-- allow_hook_edits lets a sandboxed run change git configuration and hooks
-- and the agent CLIs' project settings in its folders (otherwise undone).
ALTER TABLE workers ADD COLUMN allow_hook_edits INTEGER NOT NULL DEFAULT 0;
