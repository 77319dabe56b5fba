package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// limitSQL is a LIMIT clause with n written into the SQL text.
//
// Statements that stay prepared: SQLite lets some bound values shape a
// statement's plan, and then marks the statement to be prepared again (parsed
// and planned, which costs more than running it) whenever those parameters
// are bound anew, and go-sqlite3 clears a cached statement's bindings after
// every use. Two kinds of parameter do that: a LIMIT, and the value of an
// "x = ?" in a statement with an ORDER BY or a join, when the planner weighs a
// plan that does not use that term. A hot statement therefore writes its
// LIMIT into the text with limitSQL and binds such values as "+?" (the same
// value, with no affinity of its own, as "?"; SQLite does not look into it
// when planning, and an index on x is still used).
// TestHotStatementsStayPrepared holds the lifecycle's statements to this.
//
// n is an int, never text from a caller.
func limitSQL(n int) string { return " LIMIT " + strconv.Itoa(n) }

// queryAll runs query and reads every row with scan into a slice (empty,
// never nil, when no row matches); op names the query in errors.
func queryAll[T any](ctx context.Context, q queryer, op string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// optionalString reads the one string column of query's row, "" when there
// is no row; op names the query in errors.
func optionalString(ctx context.Context, q queryer, op, query string, args ...any) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, query, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return v, nil
}
