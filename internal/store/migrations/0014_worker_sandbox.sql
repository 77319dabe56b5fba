-- 0014: the worker sandbox. sandbox is "on", "off" or '' (the preset's
-- default); allow_paths the extra paths a sandboxed run may use (a JSON
-- array of "PATH" or "PATH:rw"); allow_unsandboxed lets a run go ahead
-- without the sandbox where the system cannot confine it.
ALTER TABLE workers ADD COLUMN sandbox           TEXT    NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN allow_paths       TEXT    NOT NULL DEFAULT '[]';
ALTER TABLE workers ADD COLUMN allow_unsandboxed INTEGER NOT NULL DEFAULT 0;
