package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Sweep is the periodic maintenance pass, in one transaction: it requeues
// every expired lease (telling senders and waking recipients), deletes
// expired run tokens, and deletes completed and cancelled tasks not updated
// within the retention window (publishing tasks-removed), old invites and
// the run activity of tasks idle that long (see pruneOld).
func (db *DB) Sweep(ctx context.Context) (relay.SweepResult, error) {
	var out relay.SweepResult
	err := db.write(ctx, "sweep", func(t *tx) error {
		n, err := requeueExpired(t, "")
		if err != nil {
			return err
		}
		out.Requeued = n
		if _, err := t.exec(`DELETE FROM run_tokens WHERE expires_at <= ?`, t.ts); err != nil {
			return fmt.Errorf("delete expired run tokens: %w", err)
		}
		cutoff := relay.FormatTime(t.now.Add(-db.retention))
		if err := t.keepConversations(cutoff); err != nil {
			return err
		}
		rows, err := t.tx.QueryContext(t.ctx, `DELETE FROM tasks WHERE status IN ('completed', 'cancelled') AND updated_at <= ? RETURNING id`, cutoff)
		if err != nil {
			return fmt.Errorf("prune tasks: %w", err)
		}
		ids, err := scanIDs(rows)
		if err != nil {
			return fmt.Errorf("prune tasks: %w", err)
		}
		out.Pruned = len(ids)
		if len(ids) > 0 {
			t.publish(relay.Change{Type: relay.ChangeTasksRemoved, IDs: ids})
		}
		out.PrunedInvites, out.PrunedActivity, err = pruneOld(t, cutoff)
		return err
	})
	return out, err
}

func scanIDs(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Stats returns task counts by state, agent counts and the tasks completed
// since local midnight, from one consistent snapshot.
func (db *DB) Stats(ctx context.Context) (relay.Stats, error) {
	now := db.now().UTC()
	var out relay.Stats
	err := db.read(ctx, "stats", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT status, COUNT(*) FROM tasks GROUP BY status`)
		if err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				status string
				n      int
			)
			if err := rows.Scan(&status, &n); err != nil {
				return fmt.Errorf("stats: %w", err)
			}
			switch relay.TaskStatus(status) {
			case relay.StatusQueued:
				out.Tasks.Queued = n
			case relay.StatusClaimed:
				out.Tasks.Claimed = n
			case relay.StatusBlocked:
				out.Tasks.Blocked = n
			case relay.StatusCompleted:
				out.Tasks.Completed = n
			case relay.StatusCancelled:
				out.Tasks.Cancelled = n
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		// Retired agents are in no list, so in no count either.
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM agents WHERE retired_at IS NULL`).Scan(&out.Agents.Total); err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		if out.Agents.Online, err = countOnline(ctx, tx, &db.book, now); err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		// "Today" is the day of the person at this computer.
		local := now.In(time.Local)
		midnight := relay.FormatTime(time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.Local))
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE status = 'completed' AND updated_at >= ?`, midnight).
			Scan(&out.DoneToday); err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		return nil
	})
	if err != nil {
		return relay.Stats{}, err
	}
	return out, nil
}
