package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A claim's lease: the holder renews it; once it has passed, the task goes
// back to its recipient's queue at the recipient's next claim or at the
// sweep.

// leaseExpiredReport is the timeline entry of a lease-expiry requeue.
const leaseExpiredReport = "Lease expired; task returned to the recipient queue."

// The statements that find expired leases, named for TestHotQueryPlans
// like the claim's (task_claim.go).
const (
	// expiredLeasesSQL finds claimed tasks whose lease has run out;
	// expiredLeasesOfSQL narrows it to one recipient (tasks_leases).
	expiredLeasesSQL   = `SELECT id, sender_slug, recipient_slug, title FROM tasks WHERE status = 'claimed' AND lease_expires_at <= ?`
	expiredLeasesOfSQL = ` AND recipient_slug = ?`
)

// RenewLease extends the lease of a claimed task by leaseSeconds from now.
// It writes no event.
func (db *DB) RenewLease(ctx context.Context, reporter, taskID string, leaseSeconds int) (relay.Task, error) {
	secs, err := relay.LeaseSeconds("leaseSeconds", leaseSeconds)
	if err != nil {
		return relay.Task{}, err
	}
	return db.holderAction(ctx, "renew lease", relay.ActionRenew, reporter, taskID, func(t *tx, task *relay.Task) error {
		lease := relay.FormatTime(t.now.Add(time.Duration(secs) * time.Second))
		if _, err := t.exec(`UPDATE tasks SET lease_expires_at = ?, updated_at = ? WHERE id = ?`, lease, t.ts, task.ID); err != nil {
			return fmt.Errorf("update lease: %w", err)
		}
		task.LeaseExpiresAt, task.UpdatedAt = lease, t.ts
		return nil
	})
}

// requeueExpired returns claimed tasks whose lease has passed to their
// recipient's queue (only recipient's, unless it is ""), with a timeline
// entry and a task-requeued event for the sender, and wakes the recipients.
func requeueExpired(t *tx, recipient string) (int, error) {
	query := expiredLeasesSQL
	args := []any{t.ts}
	if recipient != "" {
		query += expiredLeasesOfSQL
		args = append(args, recipient)
	}
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("find expired leases: %w", err)
	}
	type expired struct{ id, sender, recipient, title string }
	var list []expired
	for rows.Next() {
		var e expired
		if err := rows.Scan(&e.id, &e.sender, &e.recipient, &e.title); err != nil {
			rows.Close()
			return 0, fmt.Errorf("find expired leases: %w", err)
		}
		list = append(list, e)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("find expired leases: %w", err)
	}
	for _, e := range list {
		if err := requeue(t, e.id); err != nil {
			return 0, err
		}
		if err := t.report(e.id, relay.ReportProgress, leaseExpiredReport, ""); err != nil {
			return 0, err
		}
		if err := t.event(e.sender, relay.EventTaskRequeued, e.id, fmt.Sprintf("Lease expired for “%s”; it was requeued.", e.title)); err != nil {
			return 0, err
		}
		if _, err := t.taskChanged(e.id); err != nil {
			return 0, err
		}
		t.wakeUp(e.recipient)
	}
	return len(list), nil
}
