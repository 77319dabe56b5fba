package store

import (
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Putting a task back in its recipient's queue: requeue clears the claim
// (a release, a requeue, a request for changes, a lease that has passed);
// requeueExpired finds the claims whose lease has passed, at the
// recipient's next claim or at the sweep. The holder renews a lease with
// RenewLease (task_actions.go).

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

// requeue puts a task back in its recipient's queue, clearing the claim.
func requeue(t *tx, id string) error {
	if _, err := t.exec(`UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL, updated_at = ?
		WHERE id = ?`, t.ts, id); err != nil {
		return fmt.Errorf("requeue task: %w", err)
	}
	return nil
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
