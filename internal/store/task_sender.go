package store

import (
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// senderRule is one thing the sender of a task can do to it with a note:
// who is refused, which statuses allow it and what it writes.
type senderRule struct {
	op      string
	field   string // the note's name in errors: "reason" or "note"
	denied  *relay.Error
	allowed func(relay.TaskStatus) *relay.Error
	apply   func(t *tx, task relay.Task, note string) error
}

// senderAction checks note, runs r.apply on a task sent by sender whose
// status r.allowed passes, then refreshes sender's presence and publishes
// the task.
func (db *DB) senderAction(ctx context.Context, sender, taskID, note string, r senderRule) (relay.Task, error) {
	note, err := relay.Text(r.field, note, 1, relay.MaxLongText)
	if err != nil {
		return relay.Task{}, err
	}
	note = byOperator(ctx, note)
	return db.taskAction(ctx, r.op, "senderSlug", sender, taskID, func(t *tx, sender string, task *relay.Task) error {
		if task.SenderSlug != sender {
			return r.denied
		}
		if e := r.allowed(task.Status); e != nil {
			return e.WithDetails(map[string]any{"status": string(task.Status)})
		}
		return r.apply(t, *task, note)
	}, func(t *tx, task relay.Task) (relay.Task, error) {
		return t.taskChanged(task.ID)
	})
}

// onlyStatus allows one status and refuses any other with the message
// format, which gets the status.
func onlyStatus(want relay.TaskStatus, format string) func(relay.TaskStatus) *relay.Error {
	return func(s relay.TaskStatus) *relay.Error {
		if s == want {
			return nil
		}
		return relay.Errorf(relay.EInvalidTaskState, format, s)
	}
}

// reopenHop counts a task sent back to work from inside a worker run (a run
// token's request_changes or requeue_task) as a hand-off of the run's
// conversation: a task of that conversation goes to at least one hop past
// the run's task, and past the hand-off limit it is refused with
// chain_limit. Without it, two runs could reopen and re-post to each other
// forever, each new task one hop from a task that never gets further.
func reopenHop(t *tx, task relay.Task) error {
	p, ok := relay.PrincipalFrom(t.ctx)
	if !ok || p.RunTaskID == "" {
		return nil
	}
	var conv string
	var hops int
	if err := t.tx.QueryRowContext(t.ctx, `SELECT COALESCE(conversation_id, id), hops FROM tasks WHERE id = ?`, p.RunTaskID).Scan(&conv, &hops); err != nil {
		return fmt.Errorf("read the run's task: %w", err)
	}
	if conv != task.ConversationID || hops+1 <= task.Hops {
		return nil
	}
	if err := checkHops(t, hops+1, conv); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE tasks SET hops = ? WHERE id = ?`, hops+1, task.ID); err != nil {
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
	return db.senderAction(ctx, sender, taskID, reason, senderRule{
		op:     "cancel task",
		field:  "reason",
		denied: relay.Errorf(relay.ETaskCancelDenied, "Only the task sender can cancel this task."),
		allowed: func(s relay.TaskStatus) *relay.Error {
			if s.Open() {
				return nil
			}
			return relay.Errorf(relay.EInvalidTaskState, "A %s task cannot be cancelled.", s)
		},
		apply: func(t *tx, task relay.Task, reason string) error {
			if _, err := t.exec(`UPDATE tasks SET status = 'cancelled', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, t.ts, task.ID); err != nil {
				return fmt.Errorf("cancel task: %w", err)
			}
			if err := t.report(task.ID, relay.ReportProgress, fmt.Sprintf("Cancelled by %s: %s", task.SenderSlug, reason), ""); err != nil {
				return err
			}
			return t.event(task.RecipientSlug, relay.EventTaskCancelled, task.ID,
				fmt.Sprintf("%s cancelled “%s”: %s", task.SenderSlug, task.Title, reason))
		},
	})
}

// RequeueTask sends a blocked task back to its recipient's queue.
func (db *DB) RequeueTask(ctx context.Context, sender, taskID, note string) (relay.Task, error) {
	return db.senderAction(ctx, sender, taskID, note, senderRule{
		op:      "requeue task",
		field:   "note",
		denied:  relay.Errorf(relay.ETaskRequeueDenied, "Only the task sender can requeue this task."),
		allowed: onlyStatus(relay.StatusBlocked, "Only a blocked task can be requeued; this one is %s."),
		apply: requeueWith(relay.ReportProgress, func(task relay.Task, note string) string {
			return fmt.Sprintf("Requeued by %s: %s", task.SenderSlug, note)
		}, "%s requeued “%s”: %s"),
	})
}

// RequestChanges reopens a completed task with the sender's note; the task
// keeps its id and history.
func (db *DB) RequestChanges(ctx context.Context, sender, taskID, note string) (relay.Task, error) {
	return db.senderAction(ctx, sender, taskID, note, senderRule{
		op:      "request changes",
		field:   "note",
		denied:  relay.Errorf(relay.ETaskChangesDenied, "Only the task sender can ask for changes."),
		allowed: onlyStatus(relay.StatusCompleted, "Changes can be asked for on a completed task; this one is %s."),
		apply: requeueWith(relay.ReportChanges, func(_ relay.Task, note string) string {
			return note
		}, "%s asked for changes to “%s”: %s"),
	})
}
