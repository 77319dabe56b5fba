package store

import (
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

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
