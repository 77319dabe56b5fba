package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// copyRows copies the upstream rows at src into dst in one transaction.
func copyRows(ctx context.Context, dst, src, marker string, opts ImportOptions, res *ImportResult) (err error) {
	conn, err := sql.Open("sqlite3", dsn(dst, "_txlock=immediate&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=off&_busy_timeout=5000"))
	if err != nil {
		return err
	}
	conn.SetMaxOpenConns(1)
	defer func() {
		if cerr := conn.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS up`, dsn(src, "mode=ro")); err != nil {
		return fmt.Errorf("attach the upstream copy: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			if rerr := tx.Rollback(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	// Only the operator may exist beforehand (Open creates it).
	var other int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM events) + (SELECT count(*) FROM invites)
		+ (SELECT count(*) FROM agents WHERE kind <> 'human')`).Scan(&other); err != nil {
		return fmt.Errorf("check the target is empty: %w", err)
	}
	if other > 0 {
		return fmt.Errorf("%s already holds agents, tasks or invites; import into an empty data folder", dst)
	}
	has, err := upstreamColumns(ctx, tx)
	if err != nil {
		return err
	}
	if res.RevokedTokens, res.RevokedInvites, err = credentials(ctx, tx, has); err != nil {
		return err
	}
	col := func(table, name, fallback string) string {
		if has[table+"."+name] {
			return name
		}
		return fallback
	}
	steps := []struct{ table, sql string }{
		// Every invite arrives revoked and every agent without its token
		// (see credentials): an import brings no credential.
		{"invites", `INSERT INTO main.invites (id, code_hash, label, created_at, expires_at, max_uses, uses, revoked, display_name, role, first_task)
			SELECT id, code_hash, label, created_at, expires_at, max_uses, uses, 1, ` + col("invites", "display_name", "NULL") + `, ` + col("invites", "role", "NULL") + `, ` + col("invites", "first_task", "NULL") + ` FROM up.invites`},
		// The journal is numbered again from 1, in its order (a number in
		// the file near the end of an integer's range stopped every write
		// of an event here), and each agent's read cursor with it.
		{"agents", `INSERT INTO main.agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence, token_hash, invite_id, display_name_locked, details_locked)
			SELECT slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at,
				(SELECT count(*) FROM up.events e WHERE e.sequence <= a.last_read_sequence), NULL,
				` + col("agents", "invite_id", "NULL") + `, ` + col("agents", "display_name_locked", "0") + `, ` + col("agents", "details_locked", "0") + ` FROM up.agents a WHERE true
			ON CONFLICT (slug) DO UPDATE SET display_name = excluded.display_name, model_slug = excluded.model_slug,
				capabilities = excluded.capabilities, details = excluded.details, registered_at = excluded.registered_at,
				last_seen_at = excluded.last_seen_at, last_read_sequence = excluded.last_read_sequence,
				invite_id = excluded.invite_id, display_name_locked = excluded.display_name_locked, details_locked = excluded.details_locked`},
		{"tasks", `INSERT INTO main.tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status, created_at, updated_at, claimed_at, lease_expires_at, parent_task_id, depth, claimed_via)
			SELECT id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status, created_at, updated_at, claimed_at, lease_expires_at,
				` + col("tasks", "parent_task_id", "NULL") + `, ` + col("tasks", "depth", "0") + `, ` + col("tasks", "claimed_via", "NULL") + ` FROM up.tasks
			WHERE id GLOB '` + uuidGlob + `'`},
		{"reports", `INSERT INTO main.reports (id, task_id, kind, message, result, created_at) SELECT id, task_id, kind, message, result, created_at FROM up.reports
			WHERE task_id IN (SELECT id FROM main.tasks)`},
		{"events", `INSERT INTO main.events (sequence, recipient_slug, type, task_id, summary, created_at)
			SELECT row_number() OVER (ORDER BY sequence), recipient_slug, type, task_id, summary, created_at FROM up.events ORDER BY sequence`},
		// Only values the relay would take itself (Settings.Validate): a
		// hand-off limit past it would let runs hand work off without end,
		// and one it cannot read would stop it reading its settings.
		{"settings", `INSERT INTO main.settings (key, value) SELECT key, value FROM up.settings
			WHERE typeof(value) = 'text' AND (key = '` + keyChainMaxDepth + `' AND value IN (` + chainLimits() + `)
				OR key = '` + keyWorkersPaused + `' AND value IN ('true', 'false'))
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`},
	}
	if has["task_activity.task_id"] {
		steps = append(steps, struct{ table, sql string }{"task_activity", `INSERT INTO main.task_activity (task_id, seq, at, kind, text, detail, status, ref, files)
			SELECT task_id, seq, at, kind, text, detail, status, ref, ` + col("task_activity", "files", "NULL") + ` FROM up.task_activity
			WHERE task_id IN (SELECT id FROM main.tasks)`})
	}
	for _, s := range steps {
		r, err := tx.ExecContext(ctx, s.sql)
		if err != nil {
			return fmt.Errorf("copy %s: %w", s.table, err)
		}
		n, _ := r.RowsAffected()
		res.Counts[s.table] = int(n)
	}
	// A task whose id is no UUID could be neither read nor cancelled here,
	// and its id names its run's folder: it stays behind, said so.
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM up.tasks WHERE NOT id GLOB '`+uuidGlob+`'`).Scan(&res.SkippedTasks); err != nil {
		return fmt.Errorf("count tasks not imported: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE main.tasks SET parent_task_id = NULL WHERE parent_task_id NOT IN (SELECT id FROM main.tasks)`); err != nil {
		return fmt.Errorf("unlink tasks from those not imported: %w", err)
	}
	if err := backfill(ctx, tx); err != nil {
		return err
	}
	if res.OpenTasks, err = openTasks(ctx, tx); err != nil {
		return err
	}
	if has["workers.agent_slug"] {
		if err := copyWorkers(ctx, tx, col, opts, res); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO main.settings (key, value) VALUES (?, ?)`, importMarkerKey, marker); err != nil {
		return fmt.Errorf("record the import: %w", err)
	}
	if err := foreignKeyCheck(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// uuidGlob matches a task id as the relay takes one: a lowercase UUID.
var uuidGlob = strings.Repeat("[0-9a-f]", 8) + "-" + strings.Repeat("[0-9a-f]", 4) + "-" + strings.Repeat("[0-9a-f]", 4) + "-" +
	strings.Repeat("[0-9a-f]", 4) + "-" + strings.Repeat("[0-9a-f]", 12)

// copyWorkers copies the upstream workers whose harness this build knows.
// Every one arrives disabled: an upstream database is a file anyone may
// hand over, and its worker rows name a program and arguments to run. The
// operator reads each in the import's summary and enables it in the
// dashboard. A preset's command is not imported (the preset's own program
// is found again when the worker is enabled), only a custom program's.
func copyWorkers(ctx context.Context, tx *sql.Tx, col func(t, n, f string) string, opts ImportOptions, res *ImportResult) error {
	rows, err := tx.QueryContext(ctx, `SELECT agent_slug, harness, command, args, workdir, `+col("workers", "extra_dirs", "'[]'")+`, allowed_senders
		FROM up.workers ORDER BY agent_slug`)
	if err != nil {
		return fmt.Errorf("read workers: %w", err)
	}
	var keep []ImportedWorker
	for rows.Next() {
		var w ImportedWorker
		var args, extra, senders sql.NullString
		var command, workdir sql.NullString
		if err := rows.Scan(&w.AgentSlug, &w.Harness, &command, &args, &workdir, &extra, &senders); err != nil {
			return errors.Join(fmt.Errorf("read workers: %w", err), rows.Close())
		}
		if opts.KnownHarness != nil && !opts.KnownHarness(w.Harness) {
			res.SkippedWorkers = append(res.SkippedWorkers, w.AgentSlug+" ("+w.Harness+")")
			continue
		}
		w.Workdir = workdir.String
		w.Args, w.ExtraDirs, w.AllowedSenders = jsonStrings(args), jsonStrings(extra), jsonStrings(senders)
		if w.Harness == relay.HarnessCustom {
			w.Command = command.String
		} else {
			w.Args = []string{}
		}
		keep = append(keep, w)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read workers: %w", err)
	}
	for _, w := range keep {
		argsJSON, err := json.Marshal(w.Args)
		if err != nil {
			return fmt.Errorf("copy worker %s: %w", w.AgentSlug, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO main.workers (agent_slug, harness, command, args, prompt_mode, workdir, extra_dirs, allowed_senders,
				timeout_minutes, runs_per_hour, exclusive, enabled, env, created_at, updated_at)
			SELECT agent_slug, harness, ?, ?, prompt_mode, workdir, `+col("workers", "extra_dirs", "'[]'")+`, allowed_senders,
				timeout_minutes, `+col("workers", "max_runs_per_hour", "20")+`, `+col("workers", "exclusive", "0")+`, 0, '[]', created_at, updated_at
			FROM up.workers WHERE agent_slug = ?`, w.Command, string(argsJSON), w.AgentSlug)
		if err != nil {
			return fmt.Errorf("copy worker %s: %w", w.AgentSlug, err)
		}
	}
	res.Workers = keep
	res.Counts["workers"] = len(keep)
	return nil
}

// openTasks counts, per recipient, the imported tasks that are queued or
// claimed (a claim's lease ends and the task is run again).
func openTasks(ctx context.Context, tx *sql.Tx) (map[string]int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT recipient_slug, count(*) FROM main.tasks WHERE status IN ('queued', 'claimed') GROUP BY recipient_slug`)
	if err != nil {
		return nil, fmt.Errorf("count the open tasks: %w", err)
	}
	out := map[string]int{}
	for rows.Next() {
		var slug string
		var n int
		if err := rows.Scan(&slug, &n); err != nil {
			return nil, errors.Join(fmt.Errorf("count the open tasks: %w", err), rows.Close())
		}
		out[slug] = n
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("count the open tasks: %w", err)
	}
	return out, nil
}

// chainLimits lists, for SQL, the hand-off limits the relay takes
// ('0', …, relay.MaxChainLimit).
func chainLimits() string {
	out := make([]string, 0, relay.MaxChainLimit+1)
	for n := 0; n <= relay.MaxChainLimit; n++ {
		out = append(out, "'"+strconv.Itoa(n)+"'")
	}
	return strings.Join(out, ", ")
}

// jsonStrings decodes a JSON array of strings, or answers it as one string
// when it is not one, so the summary shows what the file held.
func jsonStrings(v sql.NullString) []string {
	out := []string{}
	if !v.Valid || v.String == "" {
		return out
	}
	if err := json.Unmarshal([]byte(v.String), &out); err != nil {
		return []string{v.String}
	}
	return out
}

// upstreamColumns lists the upstream tables' columns as "table.column":
// older upstream schema versions lack some of them.
func upstreamColumns(ctx context.Context, tx *sql.Tx) (map[string]bool, error) {
	has := map[string]bool{}
	for _, t := range []string{"agents", "tasks", "invites", "workers", "task_activity"} {
		rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?, 'up')`, t)
		if err != nil {
			return nil, fmt.Errorf("read upstream columns of %s: %w", t, err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return nil, errors.Join(fmt.Errorf("read upstream columns: %w", err), rows.Close())
			}
			has[t+"."+n] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("read upstream columns: %w", err)
		}
	}
	return has, nil
}

func foreignKeyCheck(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA main.foreign_key_check`)
	if err != nil {
		return fmt.Errorf("foreign key check: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		var table string
		var rowid sql.NullInt64
		var parent string
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return fmt.Errorf("foreign key check: %w", err)
		}
		return fmt.Errorf("the upstream data has a %s row pointing at a missing %s row; nothing was imported", table, parent)
	}
	return rows.Err()
}
