package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

var _ relay.WorkerService = (*DB)(nil)

const workerColumns = `agent_slug, harness, command, args, prompt_mode, workdir, extra_dirs, allowed_senders,
	timeout_minutes, runs_per_hour, exclusive, enabled, env, created_at, updated_at,
	session_ref, session_id, session_label, sandbox, allow_paths, allow_unsandboxed, any_session, pinned_paths, allow_hook_edits`

// scanWorker reads one workers row selected with workerColumns.
func scanWorker(row rowScanner) (relay.WorkerConfig, error) {
	var (
		c                             relay.WorkerConfig
		mode                          string
		args, extra, senders, envJSON string
		allowPaths, pinned            string
	)
	if err := row.Scan(&c.AgentSlug, &c.Harness, &c.Command, &args, &mode, &c.Workdir, &extra, &senders,
		&c.TimeoutMinutes, &c.RunsPerHour, &c.Exclusive, &c.Enabled, &envJSON, &c.CreatedAt, &c.UpdatedAt,
		&c.Session, &c.SessionID, &c.SessionLabel, &c.Sandbox, &allowPaths, &c.AllowUnsandboxed, &c.AnySession, &pinned, &c.AllowHookEdits); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(pinned), &c.Pinned); err != nil {
		return c, fmt.Errorf("worker %s pinned_paths: %w", c.AgentSlug, err)
	}
	if len(c.Pinned) == 0 {
		c.Pinned = nil
	}
	c.PromptMode = relay.PromptMode(mode)
	for _, f := range []struct {
		name string
		raw  string
		dst  *[]string
	}{
		{"args", args, &c.Args},
		{"extra_dirs", extra, &c.ExtraDirs},
		{"allowed_senders", senders, &c.AllowedSenders},
		{"env", envJSON, &c.Env},
		{"allow_paths", allowPaths, &c.AllowPaths},
	} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return c, fmt.Errorf("worker %s %s: %w", c.AgentSlug, f.name, err)
		}
		if *f.dst == nil {
			*f.dst = []string{}
		}
	}
	return c, nil
}

// getWorker reads the worker of slug (unknown_worker when there is none).
func getWorker(ctx context.Context, q queryer, slug string) (relay.WorkerConfig, error) {
	c, err := scanWorker(q.QueryRowContext(ctx, `SELECT `+workerColumns+` FROM workers WHERE agent_slug = ?`, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return c, unknownWorker(slug)
	}
	if err != nil {
		return c, fmt.Errorf("get worker: %w", err)
	}
	return c, nil
}

// stringsJSON encodes a list of strings as a JSON array ([] for nil).
func stringsJSON(s []string) string { return capsJSON(s) }

// pinsJSON encodes a worker's pinned paths as a JSON object ({} for nil).
func pinsJSON(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "{}" // strings always encode
	}
	return string(b)
}

func unknownWorker(slug string) error {
	return relay.Errorf(relay.EUnknownWorker, "“%s” has no worker.", slug).WithDetails(map[string]any{"slug": slug})
}

// SaveWorker validates c and creates or replaces the worker of c.AgentSlug,
// keeping the original created_at. The agent must exist and not be a
// person, and every allowed sender must be an existing agent or person. It publishes nothing: the worker manager publishes the status.
func (db *DB) SaveWorker(ctx context.Context, c relay.WorkerConfig) (relay.WorkerConfig, error) {
	c, err := c.Validate()
	if err != nil {
		return relay.WorkerConfig{}, err
	}
	var out relay.WorkerConfig
	err = db.write(ctx, "save worker", func(t *tx) error {
		if a, err := t.mustBeAgent(c.AgentSlug, "only agents can have a worker."); err != nil || a.RetiredAt != "" && c.Enabled {
			return cmp.Or(err, relay.RetiredNoWorker(c.AgentSlug))
		}
		if err := sendersExist(t, c.AllowedSenders); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO workers (`+workerColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (agent_slug) DO UPDATE SET
				harness = excluded.harness, command = excluded.command, args = excluded.args,
				prompt_mode = excluded.prompt_mode, workdir = excluded.workdir, extra_dirs = excluded.extra_dirs,
				allowed_senders = excluded.allowed_senders, timeout_minutes = excluded.timeout_minutes,
				runs_per_hour = excluded.runs_per_hour, exclusive = excluded.exclusive, enabled = excluded.enabled,
				env = excluded.env, updated_at = excluded.updated_at, session_ref = excluded.session_ref,
				session_id = excluded.session_id, session_label = excluded.session_label,
				sandbox = excluded.sandbox, allow_paths = excluded.allow_paths, allow_unsandboxed = excluded.allow_unsandboxed,
				any_session = excluded.any_session, pinned_paths = excluded.pinned_paths, allow_hook_edits = excluded.allow_hook_edits`,
			c.AgentSlug, c.Harness, c.Command, stringsJSON(c.Args), string(c.PromptMode), c.Workdir, stringsJSON(c.ExtraDirs),
			stringsJSON(c.AllowedSenders), c.TimeoutMinutes, c.RunsPerHour, c.Exclusive, c.Enabled, stringsJSON(c.Env),
			t.ts, t.ts, c.Session, c.SessionID, c.SessionLabel, c.Sandbox, stringsJSON(c.AllowPaths), c.AllowUnsandboxed, c.AnySession,
			pinsJSON(c.Pinned), c.AllowHookEdits); err != nil {
			return fmt.Errorf("upsert worker: %w", err)
		}
		out, err = getWorker(t.ctx, t.tx, c.AgentSlug)
		return err
	})
	if err != nil {
		return relay.WorkerConfig{}, err
	}
	return out, nil
}

// Worker returns the worker of slug. Errors: unknown_worker.
func (db *DB) Worker(ctx context.Context, slug string) (relay.WorkerConfig, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return relay.WorkerConfig{}, err
	}
	return getWorker(ctx, db.r, slug)
}

// ListWorkers returns every worker ordered by agent slug.
func (db *DB) ListWorkers(ctx context.Context) ([]relay.WorkerConfig, error) {
	return queryAll(ctx, db.r, "list workers", scanWorker, `SELECT `+workerColumns+` FROM workers ORDER BY agent_slug`)
}

// DeleteWorker removes the worker of slug; removing a missing one is
// harmless. It publishes nothing.
func (db *DB) DeleteWorker(ctx context.Context, slug string) error {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return err
	}
	return db.writeOne(ctx, "delete worker", `DELETE FROM workers WHERE agent_slug = ?`, slug)
}

// writeOne runs one statement in a write transaction; op names it in errors.
func (db *DB) writeOne(ctx context.Context, op, query string, args ...any) error {
	return db.write(ctx, op, func(t *tx) error {
		_, err := t.exec(query, args...)
		return err
	})
}

// WorkerOnly reports whether slug has a worker that is both enabled and
// exclusive, so its tasks go to that worker and chat claims get none.
func (db *DB) WorkerOnly(ctx context.Context, slug string) (bool, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return false, err
	}
	now := db.now()
	gen := db.auth.gen.Load() // for the lookup and, taken before the read, for keeping it (as in Authenticate)
	if only, ok := db.auth.workers.get(slug, gen, now); ok {
		return only, nil
	}
	var only bool
	err = db.r.QueryRowContext(ctx, `SELECT enabled AND exclusive FROM workers WHERE agent_slug = ?`, slug).Scan(&only)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("worker only: %w", err)
	}
	db.auth.workers.put(slug, only, gen, now.Add(authTTL))
	return only, nil
}

// taskExists fails with unknown_task unless id is a task.
func taskExists(ctx context.Context, q queryer, id string) error {
	ok, err := hasTask(ctx, q, id)
	if err == nil && !ok {
		err = unknownTask(id)
	}
	return err
}

// hasTask reports whether a task here has id.
func hasTask(ctx context.Context, q queryer, id string) (bool, error) {
	return exists(ctx, q, "task "+id, `SELECT 1 FROM tasks WHERE id = ?`, id)
}

// AppendActivity adds entries to the run log of a task in one transaction,
// numbering them on from the task's highest seq and stamping At with the
// transaction's time where it is empty. After commit it publishes one
// activity change carrying the numbered entries, which it also returns.
// Errors: unknown_task.
func (db *DB) AppendActivity(ctx context.Context, taskID string, entries []relay.ActivityEntry) ([]relay.ActivityEntry, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return []relay.ActivityEntry{}, nil
	}
	out := make([]relay.ActivityEntry, len(entries))
	copy(out, entries)
	err = db.write(ctx, "append activity", func(t *tx) error {
		if err := taskExists(t.ctx, t.tx, taskID); err != nil {
			return err
		}
		var last int
		if err := t.tx.QueryRowContext(t.ctx, `SELECT COALESCE(MAX(seq), 0) FROM task_activity WHERE task_id = ?`, taskID).Scan(&last); err != nil {
			return fmt.Errorf("read last activity seq: %w", err)
		}
		for i := range out {
			e := &out[i]
			e.Seq = last + 1 + i
			if e.At == "" {
				e.At = t.ts
			}
			var files any
			if len(e.Files) > 0 {
				b, err := json.Marshal(e.Files)
				if err != nil {
					return fmt.Errorf("activity files: %w", err)
				}
				files = string(b)
			}
			if _, err := t.exec(`INSERT INTO task_activity (task_id, seq, at, kind, text, detail, status, ref, files)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				taskID, e.Seq, e.At, e.Kind, e.Text, nullString(e.Detail), nullString(e.Status), nullString(e.Ref), files); err != nil {
				return fmt.Errorf("insert activity: %w", err)
			}
		}
		published := make([]relay.ActivityEntry, len(out))
		copy(published, out)
		t.publish(relay.Change{Type: relay.ChangeActivity, TaskID: taskID, Entries: published})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Activity returns the run log of a task ordered by seq. Errors: unknown_task.
func (db *DB) Activity(ctx context.Context, taskID string) ([]relay.ActivityEntry, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return nil, err
	}
	var out []relay.ActivityEntry
	err = db.read(ctx, "activity", func(tx *sql.Tx) error {
		if err := taskExists(ctx, tx, taskID); err != nil {
			return err
		}
		out, err = queryAll(ctx, tx, "activity", scanActivity, `SELECT seq, at, kind, text, detail, status, ref, files
			FROM task_activity WHERE task_id = ? ORDER BY seq`, taskID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func scanActivity(row rowScanner) (relay.ActivityEntry, error) {
	var (
		e                          relay.ActivityEntry
		detail, status, ref, files sql.NullString
	)
	if err := row.Scan(&e.Seq, &e.At, &e.Kind, &e.Text, &detail, &status, &ref, &files); err != nil {
		return e, err
	}
	e.Detail, e.Status, e.Ref = detail.String, status.String, ref.String
	if files.Valid {
		if err := json.Unmarshal([]byte(files.String), &e.Files); err != nil {
			return e, fmt.Errorf("files of entry %d: %w", e.Seq, err)
		}
	}
	return e, nil
}

// TaskChangedFile reports whether any activity entry of the task lists
// exactly path among its changed files. A missing task has none.
func (db *DB) TaskChangedFile(ctx context.Context, taskID, path string) (bool, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return false, err
	}
	if path == "" {
		return false, nil
	}
	var found bool
	err = db.r.QueryRowContext(ctx, `SELECT EXISTS (
		SELECT 1 FROM task_activity AS a, json_each(a.files) AS f
		WHERE a.task_id = ? AND a.files IS NOT NULL AND json_extract(f.value, '$.path') = ?)`, taskID, path).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("task changed file: %w", err)
	}
	return found, nil
}

// SaveRunSession creates or replaces the remembered CLI session of a task.
// Errors: unknown_task.
func (db *DB) SaveRunSession(ctx context.Context, s relay.RunSession) error {
	id, err := relay.TaskID("taskId", s.TaskID)
	if err != nil {
		return err
	}
	return db.write(ctx, "save run session", func(t *tx) error {
		if err := taskExists(t.ctx, t.tx, id); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO run_sessions (task_id, harness, session_id, workdir, request_token, request_claimed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (task_id) DO UPDATE SET harness = excluded.harness, session_id = excluded.session_id,
				workdir = excluded.workdir, request_token = excluded.request_token,
				request_claimed_at = excluded.request_claimed_at, updated_at = excluded.updated_at`,
			id, s.Harness, s.SessionID, s.Workdir, s.RequestToken, s.ClaimedAt, t.ts); err != nil {
			return fmt.Errorf("upsert run session: %w", err)
		}
		return nil
	})
}

// RunSession returns the remembered CLI session of a task; ok is false
// when there is none.
func (db *DB) RunSession(ctx context.Context, taskID string) (relay.RunSession, bool, error) {
	id, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return relay.RunSession{}, false, err
	}
	s := relay.RunSession{TaskID: id}
	err = db.r.QueryRowContext(ctx, `SELECT harness, session_id, workdir, request_token, request_claimed_at FROM run_sessions WHERE task_id = ?`, id).
		Scan(&s.Harness, &s.SessionID, &s.Workdir, &s.RequestToken, &s.ClaimedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return relay.RunSession{}, false, nil
	}
	if err != nil {
		return relay.RunSession{}, false, fmt.Errorf("run session: %w", err)
	}
	return s, true, nil
}

// sendersExist fails with unknown_agent naming the first allowed sender
// that is not an agent: a worker must never wait for tasks from a slug that
// someone could later enroll under.
func sendersExist(t *tx, senders []string) error {
	for _, s := range senders {
		ok, err := t.hasAgent(s)
		if err != nil {
			return err
		}
		if !ok {
			return relay.Errorf(relay.EUnknownAgent, "allowedSenders: “%s” is not an agent on this relay.", s).
				WithDetails(map[string]any{"slug": s, "field": "allowedSenders"})
		}
	}
	return nil
}

// dropSender removes slug from every worker's allowed senders, inside the
// transaction that deletes the agent. A worker left with nobody to take
// tasks from is turned off (an enabled worker must name a sender).
func dropSender(t *tx, slug string) error {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT w.agent_slug, w.allowed_senders FROM workers AS w
		WHERE EXISTS (SELECT 1 FROM json_each(w.allowed_senders) AS s WHERE s.value = ?)`, slug)
	if err != nil {
		return fmt.Errorf("find workers allowing %s: %w", slug, err)
	}
	type change struct {
		worker  string
		senders []string
	}
	var changes []change
	for rows.Next() {
		var worker, raw string
		if err := rows.Scan(&worker, &raw); err != nil {
			rows.Close()
			return fmt.Errorf("find workers allowing %s: %w", slug, err)
		}
		var senders []string
		if err := json.Unmarshal([]byte(raw), &senders); err != nil {
			rows.Close()
			return fmt.Errorf("worker %s allowed_senders: %w", worker, err)
		}
		keep := senders[:0]
		for _, s := range senders {
			if s != slug {
				keep = append(keep, s)
			}
		}
		changes = append(changes, change{worker, keep})
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fmt.Errorf("find workers allowing %s: %w", slug, err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("find workers allowing %s: %w", slug, err)
	}
	for _, c := range changes {
		if _, err := t.exec(`UPDATE workers SET allowed_senders = ?, enabled = enabled AND ?, updated_at = ? WHERE agent_slug = ?`,
			stringsJSON(c.senders), len(c.senders) > 0, t.ts, c.worker); err != nil {
			return fmt.Errorf("drop sender %s from worker %s: %w", slug, c.worker, err)
		}
	}
	return nil
}
