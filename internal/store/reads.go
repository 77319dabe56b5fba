package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// queryer is what both *sql.DB and *sql.Tx offer for reads.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// exists reports whether query, a SELECT 1 of what, finds a row.
func exists(ctx context.Context, q queryer, what, query string, args ...any) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find %s: %w", what, err)
	}
	return true, nil
}

// read runs fn in one read transaction on the reader pool, so its queries
// see one consistent snapshot. Domain errors from fn pass through unwrapped.
func (db *DB) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer func() {
		// Ending a read transaction undoes nothing; its error still counts.
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && err == nil {
			err = fmt.Errorf("%s: end read: %w", op, rbErr)
		}
	}()
	return fn(tx)
}

// maxSequence is the newest journal sequence, 0 when the journal is empty.
func maxSequence(ctx context.Context, q queryer) (int64, error) {
	var seq int64
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(sequence), 0) FROM events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read max sequence: %w", err)
	}
	return seq, nil
}
