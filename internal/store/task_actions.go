package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Acting on a task once it is posted: the holder's actions (renew its
// lease, report on it, release it) and the sender's (cancel it, requeue it,
// ask for changes), and the steps they share with reading one task and
// with posting (the hand-off limit). Which actor may take which action in which state is the
// domain's rule (relay.CanAct); the store checks it inside the write that
// makes the change, on the task as that write reads it.

// taskAction loads task taskID inside a write, refuses it unless
// relay.CanAct lets who (normalized from field) take action a, runs apply
// on it (nil for none), then refreshes who's presence and answers with
// what answer makes of the task.
func (db *DB) taskAction(ctx context.Context, op string, a relay.Action, field, who, taskID string,
	apply func(t *tx, task *relay.Task) error, answer func(t *tx, task relay.Task) (relay.Task, error)) (relay.Task, error) {
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
		if err := relay.CanAct(a, who, task); err != nil {
			return err
		}
		if apply != nil {
			if err := apply(t, &task); err != nil {
				return err
			}
		}
		if err := t.touch(who); err != nil {
			return err
		}
		out, err = answer(t, task)
		return err
	})
	return out, err
}

// viaDashboard marks text written by the operator on an agent's behalf.
const viaDashboard = " (via dashboard)"

// byOperator appends " (via dashboard)" to text when the operator acts on an
// agent's behalf.
func byOperator(ctx context.Context, text string) string {
	if relay.IsByOperator(ctx) {
		return text + viaDashboard
	}
	return text
}

// chainLimit reads the hand-off depth limit from settings.
func chainLimit(ctx context.Context, q queryer) (int, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, keyChainMaxDepth).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return relay.DefaultChainLimit, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read chain limit: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("read chain limit: setting %s = %q: %w", keyChainMaxDepth, v, err)
	}
	return n, nil
}

// checkHops reads the hand-off limit and holds a hand-off that takes
// conversation conv to hops hand-offs from its first task to it
// (relay.CheckChain).
func checkHops(t *tx, hops int, conv string) error {
	limit, err := chainLimit(t.ctx, t.tx)
	if err != nil {
		return err
	}
	return relay.CheckChain(hops, limit, conv)
}

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

// The sender's actions: what the agent that sent a task (or the operator
// acting as it) does with it (relay.RoleSender).

// senderAction checks note (its name in errors is field: "reason" or
// "note"), runs apply on a task sender may take action a on, then refreshes
// sender's presence and publishes the task.
func (db *DB) senderAction(ctx context.Context, op string, a relay.Action, field, sender, taskID, note string,
	apply func(t *tx, task relay.Task, note string) error) (relay.Task, error) {
	note, err := relay.Text(field, note, 1, relay.MaxLongText)
	if err != nil {
		return relay.Task{}, err
	}
	note = byOperator(ctx, note)
	return db.taskAction(ctx, op, a, "senderSlug", sender, taskID, func(t *tx, task *relay.Task) error {
		return apply(t, *task, note)
	}, func(t *tx, task relay.Task) (relay.Task, error) {
		return t.taskChanged(task.ID)
	})
}

// reopenHop counts a task sent back to work from inside a worker run (a run
// token's request_changes or requeue_task) as a hand-off of the run's
// conversation (relay.ReopenHops), refused with chain_limit past the
// hand-off limit.
func reopenHop(t *tx, task relay.Task) error {
	p, ok := relay.PrincipalFrom(t.ctx)
	if !ok || p.RunTaskID == "" {
		return nil
	}
	var run relay.Task
	if err := t.tx.QueryRowContext(t.ctx, `SELECT COALESCE(conversation_id, id), hops FROM tasks WHERE id = ?`, p.RunTaskID).
		Scan(&run.ConversationID, &run.Hops); err != nil {
		return fmt.Errorf("read the run's task: %w", err)
	}
	hops, raise := relay.ReopenHops(run, task)
	if !raise {
		return nil
	}
	if err := checkHops(t, hops, run.ConversationID); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE tasks SET hops = ? WHERE id = ?`, hops, task.ID); err != nil {
		return fmt.Errorf("count the hop: %w", err)
	}
	return nil
}

// requeueWith puts the task back in its recipient's queue with a report of
// kind (its text made by message) and tells the recipient with the
// summary format, which gets the sender, the title and the note.
func requeueWith(kind string, message func(task relay.Task, note string) string, summary string) func(t *tx, task relay.Task, note string) error {
	return func(t *tx, task relay.Task, note string) error {
		if err := reopenHop(t, task); err != nil {
			return err
		}
		if err := requeue(t, task.ID); err != nil {
			return err
		}
		if err := t.report(task.ID, kind, message(task, note), ""); err != nil {
			return err
		}
		t.wakeUp(task.RecipientSlug)
		return t.event(task.RecipientSlug, relay.EventTaskRequeued, task.ID,
			fmt.Sprintf(summary, task.SenderSlug, task.Title, note))
	}
}

// CancelTask cancels an open task, records why on its timeline and tells the
// recipient. It wakes no waiting claim.
func (db *DB) CancelTask(ctx context.Context, sender, taskID, reason string) (relay.Task, error) {
	return db.senderAction(ctx, "cancel task", relay.ActionCancel, "reason", sender, taskID, reason, func(t *tx, task relay.Task, reason string) error {
		if _, err := t.exec(`UPDATE tasks SET status = 'cancelled', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, t.ts, task.ID); err != nil {
			return fmt.Errorf("cancel task: %w", err)
		}
		if err := t.report(task.ID, relay.ReportProgress, fmt.Sprintf("Cancelled by %s: %s", task.SenderSlug, reason), ""); err != nil {
			return err
		}
		return t.event(task.RecipientSlug, relay.EventTaskCancelled, task.ID,
			fmt.Sprintf("%s cancelled “%s”: %s", task.SenderSlug, task.Title, reason))
	})
}

// RequeueTask sends a blocked task back to its recipient's queue.
func (db *DB) RequeueTask(ctx context.Context, sender, taskID, note string) (relay.Task, error) {
	return db.senderAction(ctx, "requeue task", relay.ActionRequeue, "note", sender, taskID, note,
		requeueWith(relay.ReportProgress, func(task relay.Task, note string) string {
			return fmt.Sprintf("Requeued by %s: %s", task.SenderSlug, note)
		}, "%s requeued “%s”: %s"))
}

// RequestChanges reopens a completed task with the sender's note; the task
// keeps its id and history.
func (db *DB) RequestChanges(ctx context.Context, sender, taskID, note string) (relay.Task, error) {
	return db.senderAction(ctx, "request changes", relay.ActionRequestChanges, "note", sender, taskID, note,
		requeueWith(relay.ReportChanges, func(_ relay.Task, note string) string {
			return note
		}, "%s asked for changes to “%s”: %s"))
}
