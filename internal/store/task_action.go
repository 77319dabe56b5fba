package store

import (
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Acting on a posted task: the shared steps of reading, reporting on,
// releasing, cancelling, requeueing and reopening one task. Which actor
// may take which action in which state is the domain's rule
// (relay.CanAct); the store checks it inside the write that makes the
// change, on the task as that write reads it.

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

// requeue puts a task back in its recipient's queue, clearing the claim.
func requeue(t *tx, id string) error {
	if _, err := t.exec(`UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL, updated_at = ?
		WHERE id = ?`, t.ts, id); err != nil {
		return fmt.Errorf("requeue task: %w", err)
	}
	return nil
}
