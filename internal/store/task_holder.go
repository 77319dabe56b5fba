package store

import (
	"context"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// taskAction loads task taskID inside a write and runs act on it with who
// normalized (act refuses the task or changes it), then refreshes who's
// presence and answers with what answer makes of the task.
func (db *DB) taskAction(ctx context.Context, op, field, who, taskID string,
	act func(t *tx, who string, task *relay.Task) error, answer func(t *tx, task relay.Task) (relay.Task, error)) (relay.Task, error) {
	who, err := relay.NormalizeSlug(field, who)
	if err != nil {
		return relay.Task{}, err
	}
	if taskID, err = relay.TaskID("taskId", taskID); err != nil {
		return relay.Task{}, err
	}
	var out relay.Task
	err = db.write(ctx, op, func(t *tx) error {
		task, err := getTask(t.ctx, t.tx, taskID)
		if err != nil {
			return err
		}
		if err := act(t, who, &task); err != nil {
			return err
		}
		if err := t.touch(who); err != nil {
			return err
		}
		out, err = answer(t, task)
		return err
	})
	return out, err
}

// holderAction runs fn on a task that reporter currently holds (recipient,
// status claimed), then refreshes reporter's presence and publishes the task.
// fn keeps task in step with what it writes (fields and reports), so the
// answer needs no re-read.
func (db *DB) holderAction(ctx context.Context, op, reporter, taskID string, fn func(t *tx, task *relay.Task) error) (relay.Task, error) {
	return db.taskAction(ctx, op, "reporterSlug", reporter, taskID, func(t *tx, reporter string, task *relay.Task) error {
		if task.RecipientSlug != reporter || task.Status != relay.StatusClaimed {
			return relay.Errorf(relay.ETaskUpdateDenied, "Only the recipient that currently holds a claimed task may update it.").
				WithDetails(map[string]any{"taskStatus": string(task.Status)})
		}
		return fn(t, task)
	}, func(t *tx, task relay.Task) (relay.Task, error) {
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
	return db.holderAction(ctx, "renew lease", reporter, taskID, func(t *tx, task *relay.Task) error {
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
	return db.holderAction(ctx, "report task", in.ReporterSlug, in.TaskID, func(t *tx, task *relay.Task) error {
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
	return db.holderAction(ctx, "release task", reporter, taskID, func(t *tx, task *relay.Task) error {
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

// requeue puts a task back in its recipient's queue, clearing the claim.
func requeue(t *tx, id string) error {
	if _, err := t.exec(`UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL, updated_at = ?
		WHERE id = ?`, t.ts, id); err != nil {
		return fmt.Errorf("requeue task: %w", err)
	}
	return nil
}
