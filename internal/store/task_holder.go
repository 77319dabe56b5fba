package store

import (
	"context"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The holder's actions: what the recipient that holds a claimed task does
// with it (relay.RoleHolder). A lease that has passed is task_requeue.go's.

// holderAction runs fn on a task that reporter may take action a on as its
// holder, then refreshes reporter's presence and publishes the task. fn
// keeps task in step with what it writes (fields and reports), so the
// answer needs no re-read.
func (db *DB) holderAction(ctx context.Context, op string, a relay.Action, reporter, taskID string, fn func(t *tx, task *relay.Task) error) (relay.Task, error) {
	return db.taskAction(ctx, op, a, "reporterSlug", reporter, taskID, fn, func(t *tx, task relay.Task) (relay.Task, error) {
		t.taskKnown(task)
		return task, nil
	})
}

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

// ReportTask adds progress, or completes or blocks the task, and tells the sender.
func (db *DB) ReportTask(ctx context.Context, in relay.ReportInput) (relay.Task, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Task{}, err
	}
	in.Message, in.Result = db.scrub(in.Message), db.scrub(in.Result)
	return db.holderAction(ctx, "report task", relay.ActionReport, in.ReporterSlug, in.TaskID, func(t *tx, task *relay.Task) error {
		var (
			q   string
			typ string
		)
		switch in.Kind {
		case relay.ReportProgress:
			q, typ = `UPDATE tasks SET updated_at = ? WHERE id = ?`, relay.EventTaskProgress
		case relay.ReportCompleted:
			q, typ = `UPDATE tasks SET status = 'completed', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, relay.EventTaskCompleted
			task.Status, task.LeaseExpiresAt = relay.StatusCompleted, ""
		case relay.ReportBlocked:
			q, typ = `UPDATE tasks SET status = 'blocked', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, relay.EventTaskBlocked
			task.Status, task.LeaseExpiresAt = relay.StatusBlocked, ""
		}
		if _, err := t.exec(q, t.ts, task.ID); err != nil {
			return fmt.Errorf("update task: %w", err)
		}
		task.UpdatedAt = t.ts
		if err := t.addReport(task, in.Kind, in.Message, in.Result); err != nil {
			return err
		}
		// task.Reports is the whole timeline (read in this transaction), so
		// the cap has work to do only past MaxProgressReports.
		if in.Kind == relay.ReportProgress && progressReports(task.Reports) > MaxProgressReports {
			if err := capProgress(t, task.ID); err != nil {
				return err
			}
			// The cap deleted the oldest; read the timeline as it is now.
			if err := loadReports(t.ctx, t.tx, task); err != nil {
				return err
			}
		}
		return t.event(task.SenderSlug, typ, task.ID, task.RecipientSlug+": "+in.Message)
	})
}

// progressReports counts the progress reports in a timeline.
func progressReports(rs []relay.Report) int {
	n := 0
	for _, r := range rs {
		if r.Kind == relay.ReportProgress {
			n++
		}
	}
	return n
}

// ReleaseTask gives a claimed task back to the queue and tells the sender.
func (db *DB) ReleaseTask(ctx context.Context, reporter, taskID, reason string) (relay.Task, error) {
	reason, err := relay.Text("reason", reason, 1, relay.MaxLongText)
	if err != nil {
		return relay.Task{}, err
	}
	reason = byOperator(ctx, reason)
	return db.holderAction(ctx, "release task", relay.ActionRelease, reporter, taskID, func(t *tx, task *relay.Task) error {
		if err := requeue(t, task.ID); err != nil {
			return err
		}
		task.Status, task.ClaimedAt, task.ClaimedVia, task.LeaseExpiresAt, task.UpdatedAt = relay.StatusQueued, "", "", "", t.ts
		if err := t.addReport(task, relay.ReportProgress, "Released: "+reason, ""); err != nil {
			return err
		}
		t.wakeUp(task.RecipientSlug)
		return t.event(task.SenderSlug, relay.EventTaskRequeued, task.ID,
			fmt.Sprintf("%s released “%s”: %s", task.RecipientSlug, task.Title, reason))
	})
}
