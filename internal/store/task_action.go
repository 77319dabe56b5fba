package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Acting on a task: the steps shared by reading, reporting on, releasing,
// cancelling, requeueing and reopening one task, and by posting (the
// hand-off limit). Which actor may take which action in which state is the
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
