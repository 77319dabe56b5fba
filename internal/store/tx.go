package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// tx is one write transaction with the changes and wake-ups it will publish
// after commit.
type tx struct {
	ctx context.Context
	tx  *sql.Conn // the writer connection, inside BEGIN IMMEDIATE
	db  *DB
	now time.Time
	ts  string // now in relay.TimeLayout

	changes []relay.Change
	wake    []string
	agents  []string // agents whose change this transaction publishes

	parks    []*parked // claims that found nothing and wait (handoff.go)
	handoffs []handoff // tasks claimed for parked claims
	walk     walk      // how far read_updates walked the journal (events.go)
}

// exec runs a statement in the transaction.
func (t *tx) exec(query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(t.ctx, query, args...)
}

// execCount runs a statement and returns how many rows it changed; op names
// it in errors.
func (t *tx) execCount(op, query string, args ...any) (int64, error) {
	res, err := t.exec(query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

// publish queues a change for after commit.
func (t *tx) publish(c relay.Change) { t.changes = append(t.changes, c) }

// taskChanged publishes the task's current summary and returns the full task.
func (t *tx) taskChanged(id string) (relay.Task, error) {
	task, err := getTask(t.ctx, t.tx, id)
	if err != nil {
		return relay.Task{}, err
	}
	s := summarize(task)
	t.publish(relay.Change{Type: relay.ChangeTask, Task: &s})
	return task, nil
}

// taskKnown publishes the summary of a task that the transaction has
// brought up to date in memory, so it needs no re-read.
func (t *tx) taskKnown(task relay.Task) {
	s := summarize(task)
	t.publish(relay.Change{Type: relay.ChangeTask, Task: &s})
}

// inList returns the SQL list "(?, ?, …)" for vals, which must not be
// empty, and vals as the query's arguments.
func inList[T any](vals []T) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return "(?" + strings.Repeat(", ?", len(vals)-1) + ")", args
}

// nullString stores "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// txMark is how far a write had got in memory: what it will publish, wake
// and hand over after the commit.
type txMark struct {
	changes, wake, agents, parks, handoffs int
	walk                                   walk
}

func (t *tx) mark() txMark {
	return txMark{changes: len(t.changes), wake: len(t.wake), agents: len(t.agents), parks: len(t.parks),
		handoffs: len(t.handoffs), walk: t.walk}
}

// undo forgets what the write promised in memory since m: the claims it
// took for tasks it posted wait again.
func (t *tx) undo(m txMark) {
	for _, h := range t.handoffs[m.handoffs:] {
		t.db.parking.release(h.p)
	}
	t.changes, t.wake, t.agents = t.changes[:m.changes], t.wake[:m.wake], t.agents[:m.agents]
	t.parks, t.handoffs, t.walk = t.parks[:m.parks], t.handoffs[:m.handoffs], m.walk
}

// savepoint runs fn inside the write in a savepoint of its own (name):
// when fn fails, what it wrote and what it promised in memory are undone
// and its error is returned as err, and the write goes on. broken is set
// when the savepoint itself could not be made, undone or released: the
// write has then failed as a whole.
func (t *tx) savepoint(name string, fn func() error) (err, broken error) {
	if _, err := t.exec("SAVEPOINT " + name); err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	m := t.mark()
	if err = callFn(func(*tx) error { return fn() }, t); err == nil {
		if _, err := t.exec("RELEASE " + name); err != nil {
			return nil, fmt.Errorf("release savepoint: %w", err)
		}
		return nil, nil
	}
	t.undo(m)
	if _, rbErr := t.exec("ROLLBACK TO " + name + "; RELEASE " + name); rbErr != nil {
		return err, fmt.Errorf("rollback to savepoint: %w", rbErr)
	}
	return err, nil
}

func unknownAgent(slug string) error {
	return relay.Errorf(relay.EUnknownAgent, "Unknown agent “%s”.", slug).WithDetails(map[string]any{"slug": slug})
}

func unknownTask(id string) error {
	return relay.Errorf(relay.EUnknownTask, "Unknown task “%s”.", id).WithDetails(map[string]any{"taskId": id})
}
