package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

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
