package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The upstream relay (the TypeScript Crosschat Relay this one is compatible
// with) uses the same data folder names and almost the same tables, but
// versions its schema on its own scale (PRAGMA user_version 1..6) and has no
// migrations of ours. Its file is told apart from ours by its shape, never
// by the version number alone: our events table is AUTOINCREMENT (so SQLite
// keeps a sqlite_sequence table) and ours has run_sessions; upstream's has
// neither.

// upstreamTables must all exist in an upstream relay.db.
var upstreamTables = []string{"agents", "tasks", "reports", "events", "invites", "settings"}

// importMarkerKey is the settings key that records an import: the source's
// SHA-256 and when it was imported.
const importMarkerKey = "import.upstream"

// UpstreamError is returned by Open when the file holds the upstream relay's
// database: it is not ours to migrate, and it is left untouched.
type UpstreamError struct {
	Path          string
	SchemaVersion int
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("%s was written by the upstream Crosschat Relay (its schema version %d), not by this app; import it with `crosschat-relay import-upstream` (the file is kept unchanged)", e.Path, e.SchemaVersion)
}

// IsUpstream reports whether err says the database belongs to the upstream relay.
func IsUpstream(err error) bool {
	var ue *UpstreamError
	return errors.As(err, &ue)
}

// inspect reads the shape of the database at path read-only: its
// user_version and whether it is an upstream relay's file.
func inspect(ctx context.Context, path string) (version int, upstream bool, err error) {
	// immutable: a WAL-mode file opened read-only would otherwise get -wal
	// and -shm files beside it. Only when a -wal is already there (the
	// writer stopped uncleanly) must SQLite read it.
	params := "mode=ro&immutable=1"
	if _, err := os.Stat(path + "-wal"); err == nil {
		params = "mode=ro&_busy_timeout=5000"
	}
	ro, err := sql.Open("sqlite3", dsn(path, params))
	if err != nil {
		return 0, false, err
	}
	defer func() {
		if cerr := ro.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if version, err = userVersion(ctx, ro); err != nil {
		return 0, false, err
	}
	rows, err := ro.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return 0, false, fmt.Errorf("list tables: %w", err)
	}
	tables := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return 0, false, errors.Join(fmt.Errorf("list tables: %w", err), rows.Close())
		}
		tables[n] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, false, fmt.Errorf("list tables: %w", err)
	}
	if tables["sqlite_sequence"] || tables["run_sessions"] {
		return version, false, nil
	}
	for _, t := range upstreamTables {
		if !tables[t] {
			return version, false, nil
		}
	}
	return version, true, nil
}

// DetectUpstream reports whether path is a relay.db written by the upstream
// relay, and its schema version. A missing file is not one. The file is
// opened read-only.
func DetectUpstream(path string) (bool, int, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return false, 0, fmt.Errorf("inspect: %w", err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	} else if err != nil {
		return false, 0, fmt.Errorf("inspect %s: %w", path, err)
	}
	v, up, err := inspect(context.Background(), path)
	if err != nil {
		return false, 0, fmt.Errorf("inspect %s: %w", path, err)
	}
	return up, v, nil
}

// ImportOptions configure ImportUpstream.
type ImportOptions struct {
	// Store are the options the target database is opened with.
	Store Options
	// KnownHarness reports whether a worker's harness id exists in this
	// build; workers with other harnesses are skipped. Nil keeps them all.
	KnownHarness func(id string) bool
}

// ImportResult says what an import did.
type ImportResult struct {
	// Source is the upstream file that was read.
	Source string `json:"source"`
	// Kept is where the untouched upstream file is now (the source itself,
	// or where it was moved when it was the target's own relay.db).
	Kept string `json:"kept"`
	// Backup is a byte-for-byte copy of the upstream file made before anything else.
	Backup string `json:"backup"`
	// AlreadyImported is true when this source had been imported before:
	// nothing was changed.
	AlreadyImported bool `json:"alreadyImported"`
	// Counts are the rows imported per table.
	Counts map[string]int `json:"counts"`
	// SkippedWorkers are the workers whose harness this build does not know.
	SkippedWorkers []string `json:"skippedWorkers,omitempty"`
	// Workers are the imported workers, each disabled, with what it would
	// run: the operator enables them one by one after reading this.
	Workers []ImportedWorker `json:"workers,omitempty"`
	// UpstreamVersion is the upstream file's schema version.
	UpstreamVersion int `json:"upstreamVersion"`
}

// ImportedWorker is one worker an import brought in, disabled.
type ImportedWorker struct {
	AgentSlug string `json:"agentSlug"`
	Harness   string `json:"harness"`
	// Command is the custom program the worker would run; empty for a
	// preset, whose own program is found when the worker is enabled.
	Command string `json:"command"`
	// Args are the custom program's arguments (none for a preset).
	Args           []string `json:"args"`
	Workdir        string   `json:"workdir"`
	ExtraDirs      []string `json:"extraDirs"`
	AllowedSenders []string `json:"allowedSenders"`
}

// importMarker is the value stored under importMarkerKey.
type importMarker struct {
	SHA256     string `json:"sha256"`
	From       string `json:"from"`
	ImportedAt string `json:"importedAt"`
}

// ImportUpstream copies an upstream relay's database at src into our
// database at dst: agents with their token hashes (their tokens keep
// working), invites, tasks with reports and run activity, the journal with
// its sequences and every agent's read cursor, the settings both relays
// share, and workers whose harness exists here, each disabled (see
// copyWorkers). Run tokens are not imported
// (they belong to runs that ended with the old process).
//
// The upstream file is never written: it is copied to a backup beside dst
// first, and the import reads that copy. When src is dst itself (the data
// folder still holds the upstream relay.db), the original is moved aside
// unchanged to relay-upstream.db and a new relay.db is made. The import is
// one transaction; running it again with the same source changes nothing,
// and importing into a database that already holds other data is refused.
func ImportUpstream(ctx context.Context, src, dst string, opts ImportOptions) (res ImportResult, err error) {
	src, err = filepath.Abs(src)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	dst, err = filepath.Abs(dst)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	res = ImportResult{Source: src, Kept: src, Counts: map[string]int{}}
	inPlace := src == dst
	if inPlace {
		if up, _, err := DetectUpstream(src); err != nil {
			return res, fmt.Errorf("import: %w", err)
		} else if !up {
			// Already ours: an earlier import moved the upstream file aside.
			return alreadyImported(ctx, dst, res, opts)
		}
	}
	up, version, err := DetectUpstream(src)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if !up {
		return res, fmt.Errorf("import: %s is not a database of the upstream Crosschat Relay", src)
	}
	res.UpstreamVersion = version
	sum, err := fileSHA256(src)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return res, fmt.Errorf("import: create data folder: %w", err)
	}
	if inPlace {
		kept, err := freeName(filepath.Join(filepath.Dir(dst), "relay-upstream.db"))
		if err != nil {
			return res, fmt.Errorf("import: %w", err)
		}
		if err := moveDB(src, kept); err != nil {
			return res, fmt.Errorf("import: move the upstream database aside: %w", err)
		}
		res.Kept, src = kept, kept
		defer func() {
			if err != nil { // put the upstream file back where it was
				_ = removeDB(dst)
				if merr := moveDB(kept, dst); merr != nil {
					err = errors.Join(err, fmt.Errorf("restore %s: %w", dst, merr))
				} else {
					res.Kept = dst
				}
			}
		}()
	} else if done, err := markerMatches(ctx, dst, sum); err != nil {
		return res, err
	} else if done {
		res.AlreadyImported = true
		return res, nil
	}
	backup, err := freeName(filepath.Join(filepath.Dir(dst), "relay-upstream.backup.db"))
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if err := copyDB(src, backup); err != nil {
		return res, fmt.Errorf("import: back up %s: %w", src, err)
	}
	res.Backup = backup
	// The import reads its own scratch copy, so not even SQLite's -shm file
	// appears beside the kept original.
	scratch, err := os.MkdirTemp(filepath.Dir(dst), ".import-")
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(scratch)
	work := filepath.Join(scratch, "upstream.db")
	if err := copyDB(src, work); err != nil {
		return res, fmt.Errorf("import: copy %s: %w", src, err)
	}

	// Make (or migrate) our database, then check it holds nothing else.
	db, err := Open(dst, opts.Store)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if err := db.Close(); err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	marker, _ := json.Marshal(importMarker{SHA256: sum, From: res.Kept, ImportedAt: relay.FormatTime(time.Now())})
	if err := copyRows(ctx, dst, work, string(marker), opts, &res); err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	return res, nil
}

// alreadyImported answers a second in-place import: dst is ours and was
// made by an import.
func alreadyImported(ctx context.Context, dst string, res ImportResult, opts ImportOptions) (ImportResult, error) {
	m, err := readMarker(ctx, dst)
	if err != nil {
		return res, err
	}
	if m == nil {
		return res, fmt.Errorf("import: %s is already a Crosschat Relay database and holds no upstream import; name the upstream file with --from", dst)
	}
	res.AlreadyImported = true
	res.Kept = m.From
	res.Source = m.From
	return res, nil
}

func readMarker(ctx context.Context, dst string) (*importMarker, error) {
	if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	ro, err := sql.Open("sqlite3", dsn(dst, "mode=ro&_busy_timeout=5000"))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer ro.Close()
	var v string
	err = ro.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, importMarkerKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "no such table")) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("import: read %s: %w", dst, err)
	}
	var m importMarker
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("import: %s: bad import marker: %w", dst, err)
	}
	return &m, nil
}

func markerMatches(ctx context.Context, dst, sum string) (bool, error) {
	m, err := readMarker(ctx, dst)
	if err != nil || m == nil {
		return false, err
	}
	if m.SHA256 == sum {
		return true, nil
	}
	return false, fmt.Errorf("import: %s already holds an import from %s; import into an empty data folder", dst, m.From)
}

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
	col := func(table, name, fallback string) string {
		if has[table+"."+name] {
			return name
		}
		return fallback
	}
	steps := []struct{ table, sql string }{
		{"invites", `INSERT INTO main.invites (id, code_hash, label, created_at, expires_at, max_uses, uses, revoked, display_name, role, first_task)
			SELECT id, code_hash, label, created_at, expires_at, max_uses, uses, revoked, ` + col("invites", "display_name", "NULL") + `, ` + col("invites", "role", "NULL") + `, ` + col("invites", "first_task", "NULL") + ` FROM up.invites`},
		{"agents", `INSERT INTO main.agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence, token_hash, invite_id, display_name_locked, details_locked)
			SELECT slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence, token_hash,
				` + col("agents", "invite_id", "NULL") + `, ` + col("agents", "display_name_locked", "0") + `, ` + col("agents", "details_locked", "0") + ` FROM up.agents WHERE true
			ON CONFLICT (slug) DO UPDATE SET kind = excluded.kind, display_name = excluded.display_name, model_slug = excluded.model_slug,
				capabilities = excluded.capabilities, details = excluded.details, registered_at = excluded.registered_at,
				last_seen_at = excluded.last_seen_at, last_read_sequence = excluded.last_read_sequence, token_hash = excluded.token_hash,
				invite_id = excluded.invite_id, display_name_locked = excluded.display_name_locked, details_locked = excluded.details_locked`},
		{"tasks", `INSERT INTO main.tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status, created_at, updated_at, claimed_at, lease_expires_at, parent_task_id, depth, claimed_via)
			SELECT id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status, created_at, updated_at, claimed_at, lease_expires_at,
				` + col("tasks", "parent_task_id", "NULL") + `, ` + col("tasks", "depth", "0") + `, ` + col("tasks", "claimed_via", "NULL") + ` FROM up.tasks`},
		{"reports", `INSERT INTO main.reports (id, task_id, kind, message, result, created_at) SELECT id, task_id, kind, message, result, created_at FROM up.reports`},
		{"events", `INSERT INTO main.events (sequence, recipient_slug, type, task_id, summary, created_at) SELECT sequence, recipient_slug, type, task_id, summary, created_at FROM up.events ORDER BY sequence`},
		{"settings", `INSERT INTO main.settings (key, value) SELECT key, value FROM up.settings WHERE key IN ('` + keyChainMaxDepth + `', '` + keyWorkersPaused + `')
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`},
	}
	if has["task_activity.task_id"] {
		steps = append(steps, struct{ table, sql string }{"task_activity", `INSERT INTO main.task_activity (task_id, seq, at, kind, text, detail, status, ref, files)
			SELECT task_id, seq, at, kind, text, detail, status, ref, ` + col("task_activity", "files", "NULL") + ` FROM up.task_activity`})
	}
	for _, s := range steps {
		r, err := tx.ExecContext(ctx, s.sql)
		if err != nil {
			return fmt.Errorf("copy %s: %w", s.table, err)
		}
		n, _ := r.RowsAffected()
		res.Counts[s.table] = int(n)
	}
	if err := backfill(ctx, tx); err != nil {
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

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// freeName returns path, or path with a number before its extension when
// path is taken.
func freeName(path string) (string, error) {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	for i := 1; i < 1000; i++ {
		p := path
		if i > 1 {
			p = fmt.Sprintf("%s-%d%s", base, i, ext)
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free file name like %s", path)
}

// dbSuffixes are the files of one SQLite database.
var dbSuffixes = []string{"", "-wal", "-shm"}

// copyDB copies the database file and its WAL (if any) to dst.
func copyDB(src, dst string) error {
	for _, s := range dbSuffixes[:2] {
		if err := copyFile(src+s, dst+s); err != nil {
			if s != "" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Sync()
}

// moveDB renames a database and its WAL and shared-memory files.
func moveDB(src, dst string) error {
	for _, s := range dbSuffixes {
		if err := os.Rename(src+s, dst+s); err != nil && !(s != "" && errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	return nil
}

func removeDB(path string) error {
	var errs []error
	for _, s := range dbSuffixes {
		if err := os.Remove(path + s); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
