package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// tx is one write transaction: its statements and savepoints, and what
// every lifecycle write leaves besides its own rows — the journal entry for
// whom it concerns (event), the acting agent's presence (touch, present,
// seen) — and the changes and wake-ups it publishes after commit (publish,
// taskKnown, agentChanged, summarize). A post, claim or report walks
// through its own task file and this one.
type tx struct {
	ctx context.Context
	tx  *sql.Conn // the writer connection, inside BEGIN IMMEDIATE
	db  *DB
	now time.Time
	ts  string // now in relay.TimeLayout

	changes []relay.Change
	wake    []string
	agents  []string // agents whose change this transaction publishes

	parks    []*parked // claims that found nothing and wait (task_claim.go)
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

// The records a write leaves beside its own rows.

// event appends a journal entry for recipient, trims the journal to
// maxEvents and publishes the event after commit.
func (t *tx) event(recipient, typ, taskID, summary string) error {
	res, err := t.exec(`INSERT INTO events (recipient_slug, type, task_id, summary, created_at) VALUES (?, ?, ?, ?, ?)`,
		recipient, typ, taskID, summary, t.ts)
	if err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	if cut := seq - t.db.maxEvents; cut > 0 {
		if _, err := t.exec(`DELETE FROM events WHERE sequence <= ?`, cut); err != nil {
			return fmt.Errorf("trim events: %w", err)
		}
	}
	t.publish(relay.Change{Type: relay.ChangeJournal, Event: &relay.Event{
		Sequence: seq, RecipientSlug: recipient, Type: typ, TaskID: taskID, Summary: summary, CreatedAt: t.ts,
	}})
	return nil
}

// touch refreshes slug's presence (unknown_agent if it does not exist).
// Actions the operator takes on an agent's behalf leave presence alone.
// A presence-only agent change is published at most once per
// presenceThrottle per agent.
func (t *tx) touch(slug string) error {
	if relay.IsByOperator(t.ctx) {
		return t.mustExist(slug)
	}
	return t.present(slug)
}

// present refreshes slug's presence (unknown_agent if it does not exist),
// whoever acts.
func (t *tx) present(slug string) error {
	if n, err := t.execCount("touch agent", `UPDATE agents SET last_seen_at = ? WHERE slug = ?`, t.ts, slug); err != nil {
		return err
	} else if n == 0 {
		return unknownAgent(slug)
	}
	return t.seen(slug)
}

// touchCursor is touch for an agent (not the operator acting for it) that
// also moves its read cursor, in one UPDATE.
func (t *tx) touchCursor(slug string, cursor int64) error {
	if n, err := t.execCount("touch agent", `UPDATE agents SET last_seen_at = ?, last_read_sequence = ? WHERE slug = ?`, t.ts, cursor, slug); err != nil {
		return err
	} else if n == 0 {
		return unknownAgent(slug)
	}
	return t.seen(slug)
}

// seen publishes slug's agent change after its presence was refreshed, at
// most once per presenceThrottle.
func (t *tx) seen(slug string) error {
	t.db.presenceMu.Lock()
	last, seen := t.db.presence[slug]
	t.db.presenceMu.Unlock()
	if seen && t.now.Sub(last) < presenceThrottle && !t.now.Before(last) {
		return nil
	}
	for _, s := range t.agents {
		if s == slug {
			return nil
		}
	}
	return t.agentChanged(slug)
}

// What a write publishes after commit.

// agentChanged publishes the agent's current row.
func (t *tx) agentChanged(slug string) error {
	a, err := getAgent(t.ctx, t.tx, slug, t.now, &t.db.book)
	if err != nil {
		return err
	}
	t.publish(relay.Change{Type: relay.ChangeAgent, Agent: &a})
	t.agents = append(t.agents, slug)
	return nil
}

// summarize derives a task's summary from the full task.
func summarize(t relay.Task) relay.TaskSummary {
	s := relay.TaskSummary{
		ID: t.ID, SenderSlug: t.SenderSlug, RecipientSlug: t.RecipientSlug, Title: t.Title,
		RequiredCapabilities: t.RequiredCapabilities, Priority: t.Priority, Status: t.Status,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, ClaimedAt: t.ClaimedAt, LeaseExpiresAt: t.LeaseExpiresAt,
		ParentTaskID: t.ParentTaskID, Depth: t.Depth, ConversationID: t.ConversationID, Hops: t.Hops,
		TargetSession: t.TargetSession, ClaimedVia: t.ClaimedVia, ReportCount: len(t.Reports),
	}
	if n := len(t.Reports); n > 0 {
		r := t.Reports[n-1]
		s.LatestReport = &relay.ReportExcerpt{Kind: r.Kind, Message: excerpt(r.Message), CreatedAt: r.CreatedAt}
	}
	return s
}

// excerptLen is the longest latest-report message on a summary, in characters.
const excerptLen = 280

// excerpt collapses whitespace and cuts s to excerptLen characters (279 and "…").
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= excerptLen {
		return s
	}
	r := []rune(s)
	return string(r[:excerptLen-1]) + "…"
}
