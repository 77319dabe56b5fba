package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// listCheck is a CHECK constraint of the first migrations that names a
// list of three values or more, which SQLite evaluates by building a
// temporary table on every insert or update of the column (migration
// 0012).
type listCheck struct {
	table, column string
	values        []string // SQL literals
}

// listChecks are the constraints migration 0012 rewrites.
var listChecks = []listCheck{
	{"tasks", "priority", []string{"1", "2", "3"}},
	{"tasks", "status", []string{"'queued'", "'claimed'", "'blocked'", "'completed'", "'cancelled'"}},
	{"reports", "kind", []string{"'progress'", "'completed'", "'blocked'", "'changes'"}},
	{"workers", "prompt_mode", []string{"'stdin'", "'file'", "'argument'"}},
	{"mesh_tasks", "mark", []string{"'verified'", "'unverified'", "'mismatch'"}},
}

// list is the constraint as the migration that made the table wrote it.
func (c listCheck) list() string {
	return fmt.Sprintf("CHECK (%s IN (%s))", c.column, strings.Join(c.values, ", "))
}

// chain is the same constraint as comparisons joined by OR: for NULL it
// is NULL (the row passes) and for any other value true exactly when the
// value is in the list, like IN.
func (c listCheck) chain() string {
	terms := make([]string, len(c.values))
	for i, v := range c.values {
		terms[i] = c.column + " = " + v
	}
	return "CHECK (" + strings.Join(terms, " OR ") + ")"
}

// chainChecks is migration 0012's Go step: it rewrites each of listChecks
// in the table's stored CREATE TABLE text, in place. SQLite documents this
// (PRAGMA writable_schema, then a new schema_version) for changes to a
// table's definition that leave what is stored in it as it is; a CHECK that
// accepts the same values is one, so no table is copied, however many rows
// it holds. A table whose text does not hold the list word for word (a
// database taken back to an older version by hand, say) keeps its
// constraint, which means the same. The new text is parsed before the
// transaction commits: if SQLite cannot read it, the migration fails and
// rolls back.
func chainChecks(ctx context.Context, tx *sql.Tx) (err error) {
	var version int64
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA writable_schema = ON"); err != nil {
		return fmt.Errorf("rewrite checks: %w", err)
	}
	defer func() {
		if _, offErr := tx.ExecContext(ctx, "PRAGMA writable_schema = OFF"); offErr != nil {
			err = errors.Join(err, fmt.Errorf("rewrite checks: %w", offErr))
		}
	}()
	changed := false
	for _, c := range listChecks {
		res, err := tx.ExecContext(ctx, `UPDATE sqlite_schema SET sql = replace(sql, ?1, ?2)
			WHERE type = 'table' AND name = ?3 AND instr(sql, ?1) > 0`, c.list(), c.chain(), c.table)
		if err != nil {
			return fmt.Errorf("rewrite %s.%s check: %w", c.table, c.column, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("rewrite %s.%s check: %w", c.table, c.column, err)
		} else if n > 0 {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	// A new schema version makes every connection read the schema again,
	// this one included; PRAGMA takes no bound parameters.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", version+1)); err != nil {
		return fmt.Errorf("rewrite checks: new schema version: %w", err)
	}
	for _, c := range listChecks {
		// Preparing a statement on the table reads the new text. While
		// writable_schema is on, SQLite leaves out a table whose text it
		// cannot parse instead of failing: the table is missing, and this
		// fails with "no such table".
		if _, err := tx.ExecContext(ctx, "SELECT 1 FROM "+c.table+" LIMIT 0"); err != nil {
			return fmt.Errorf("rewrite checks: read %s again: %w", c.table, err)
		}
	}
	return nil
}
