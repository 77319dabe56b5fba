package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// GetTask returns a task to its sender or recipient and refreshes the
// requester's presence.
func (db *DB) GetTask(ctx context.Context, requester, taskID string) (relay.Task, error) {
	return db.taskAction(ctx, "get task", relay.ActionRead, "requesterSlug", requester, taskID, nil, func(_ *tx, task relay.Task) (relay.Task, error) {
		return task, nil
	})
}

// Task returns any task without an access check or presence change.
func (db *DB) Task(ctx context.Context, taskID string) (relay.Task, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return relay.Task{}, err
	}
	var out relay.Task
	err = db.read(ctx, "get task", func(tx *sql.Tx) error {
		out, err = getTask(ctx, tx, taskID)
		return err
	})
	return out, err
}

// escapeLike escapes LIKE wildcards with a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ListTasks returns task summaries ordered by updatedAt, newest first.
func (db *DB) ListTasks(ctx context.Context, f relay.TaskFilter) ([]relay.TaskSummary, error) {
	var (
		where []string
		args  []any
	)
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if len(f.Statuses) > 0 {
		list, statuses := inList(f.Statuses)
		where = append(where, "t.status IN "+list)
		args = append(args, statuses...)
	}
	if a := strings.ToLower(strings.TrimSpace(f.Agent)); a != "" {
		// Bound as +? so that the statement stays prepared (see limitSQL).
		where = append(where, "(t.sender_slug = +? OR t.recipient_slug = +?)")
		args = append(args, a, a)
	}
	if q := strings.TrimSpace(f.Query); q != "" {
		where = append(where, `(t.title LIKE ? ESCAPE '\' OR (? != '' AND t.id LIKE ? ESCAPE '\'))`)
		args = append(args, "%"+escapeLike(q)+"%", f.IDPart(), "%"+escapeLike(f.IDPart())+"%")
	}
	query := `SELECT ` + summaryColumns + summaryFrom
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY t.updated_at DESC, t.rowid DESC" + limitSQL(relay.Clamp(f.Limit, relay.DefaultTaskLimit, 1, relay.MaxListLimit))
	return listSummaries(ctx, db.r, "list tasks", query, args...)
}

func listSummaries(ctx context.Context, q queryer, op, query string, args ...any) ([]relay.TaskSummary, error) {
	return queryAll(ctx, q, op, scanSummary, query, args...)
}

// RelatedTasks returns the task a task was handed off from and the tasks
// handed off from it, oldest first.
func (db *DB) RelatedTasks(ctx context.Context, taskID string) (relay.RelatedTasks, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return relay.RelatedTasks{}, err
	}
	var out relay.RelatedTasks
	err = db.read(ctx, "related tasks", func(tx *sql.Tx) error {
		var parent sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT parent_task_id FROM tasks WHERE id = ?`, taskID).Scan(&parent)
		if errors.Is(err, sql.ErrNoRows) {
			return unknownTask(taskID)
		}
		if err != nil {
			return fmt.Errorf("related tasks: %w", err)
		}
		if parent.Valid {
			ps, err := listSummaries(ctx, tx, "related tasks", `SELECT `+summaryColumns+summaryFrom+` WHERE t.id = ?`, parent.String)
			if err != nil {
				return err
			}
			if len(ps) == 1 {
				out.Parent = &ps[0]
			}
		}
		out.Children, err = listSummaries(ctx, tx, "related tasks",
			`SELECT `+summaryColumns+summaryFrom+` WHERE t.parent_task_id = ? ORDER BY t.created_at, t.rowid`, taskID)
		return err
	})
	if err != nil {
		return relay.RelatedTasks{}, err
	}
	return out, nil
}
