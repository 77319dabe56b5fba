package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
