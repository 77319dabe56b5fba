package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// SchemaVersion is the database schema version this build writes and reads.
// It is stored in PRAGMA user_version; a database with a newer version is
// refused unchanged.
const SchemaVersion = 25

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema step, applied in its own transaction.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations ordered by version. File names
// start with a zero-padded version: 0001_init.sql.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	out := make([]migration, 0, len(names))
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be <version>_<name>.sql", base)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: bad version %q", base, num)
		}
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		out = append(out, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	if len(out) != SchemaVersion {
		return nil, fmt.Errorf("migrations: have %d, SchemaVersion is %d", len(out), SchemaVersion)
	}
	return out, nil
}

// newerSchemaError tells the user the database was written by a newer build.
func newerSchemaError(path string, found int) error {
	return fmt.Errorf("database %s has schema version %d, newer than the version %d this build of Crosschat Relay understands; upgrade Crosschat Relay to open it (the file was not modified)", path, found, SchemaVersion)
}

// userVersion reads PRAGMA user_version.
func userVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// afterMigration are Go steps run inside a migration's transaction, after
// its SQL, by version.
var afterMigration = map[int]func(context.Context, *sql.Tx) error{
	7:  backfill,
	12: chainChecks,
}

// migrate brings the database to SchemaVersion, one transaction per step,
// and logs the move as one line ("database migrated from 0 to 21"); a step
// that fails ends it there, the steps before it kept and logged.
func (db *DB) migrate(ctx context.Context, path string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	current, err := userVersion(ctx, db.w)
	if err != nil {
		return err
	}
	if current > SchemaVersion {
		return newerSchemaError(path, current)
	}
	from := current
	defer func() {
		if current > from {
			db.log.Info(fmt.Sprintf("database migrated from %d to %d", from, current), "path", path)
		}
	}()
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if err := db.applyMigration(ctx, m); err != nil {
			return err
		}
		current = m.version
	}
	return nil
}

func (db *DB) applyMigration(ctx context.Context, m migration) (err error) {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: begin: %w", m.name, err)
	}
	defer func() {
		if err != nil {
			if rbErr := tx.Rollback(); rbErr != nil {
				err = fmt.Errorf("%w (rollback: %v)", err, rbErr)
			}
		}
	}()
	if _, err = tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if step := afterMigration[m.version]; step != nil {
		if err = step(ctx, tx); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	// PRAGMA does not take bound parameters; the version is an int we made.
	if _, err = tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return fmt.Errorf("migration %s: set version: %w", m.name, err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.name, err)
	}
	return nil
}
