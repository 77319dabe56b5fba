//go:build cgo

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// countedDriver is go-sqlite3 with every statement a connection runs
// through ExecContext or QueryContext recorded, so that a test can hold a
// call to the statements it costs. BEGIN, COMMIT, ROLLBACK, the read of
// auth_epoch before a commit and the checkpoint between batches are the
// batch's, not a call's (so is the outbox head, read with it), and the
// savepoints run as statements prepared once per batch, which these
// methods never see.
const countedDriver = "sqlite3-counted"

var counted struct {
	mu  sync.Mutex
	ran []string
}

type countingDriver struct{ sqlite3.SQLiteDriver }

func (d *countingDriver) Open(dsn string) (driver.Conn, error) {
	c, err := d.SQLiteDriver.Open(dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{c.(*sqlite3.SQLiteConn)}, nil
}

type countingConn struct{ *sqlite3.SQLiteConn }

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	countStatement(query)
	return c.SQLiteConn.ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	countStatement(query)
	return c.SQLiteConn.QueryContext(ctx, query, args)
}

func countStatement(query string) {
	q := strings.TrimSpace(query)
	for _, batch := range []string{"BEGIN", "COMMIT", "ROLLBACK", "PRAGMA wal_checkpoint", commitMarksSQL} {
		if strings.HasPrefix(q, batch) {
			return
		}
	}
	counted.mu.Lock()
	counted.ran = append(counted.ran, strings.Join(strings.Fields(q), " "))
	counted.mu.Unlock()
}

// takeCounted returns the statements run since the last call, in order.
func takeCounted() []string {
	counted.mu.Lock()
	defer counted.mu.Unlock()
	ran := counted.ran
	counted.ran = nil
	return ran
}

func init() { sql.Register(countedDriver, &countingDriver{}) }

// TestLifecycleStatements holds each call of the task lifecycle to the
// statements it runs: every statement is a round trip through database/sql
// and cgo on the writer, which runs every write in turn. The journal is
// far from its cap here, so no event is trimmed.
func TestLifecycleStatements(t *testing.T) {
	db := openWith(t, countedDriver, "sender", "worker")
	ctx := context.Background()

	var id string
	cases := []struct {
		name string
		call func() error
		want int
	}{
		// touch, open tasks with their cap, recipient, insert
		{"post_task", func() error {
			task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "sender", RecipientSlug: "worker", Title: "Task", Instructions: "Do it."})
			id = task.ID
			return err
		}, 4},
		// expired leases, touch, next task, its reports, claim, event
		{"claim_next_task", func() error {
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker"})
			if err == nil && (task == nil || task.ID != id) {
				t.Fatalf("claimed %+v, want %s", task, id)
			}
			return err
		}, 6},
		// task, its reports, update, report, event, touch
		{"report_task progress", func() error {
			_, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "worker", TaskID: id, Kind: relay.ReportProgress, Message: "Half."})
			return err
		}, 6},
		{"report_task completed", func() error {
			_, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "worker", TaskID: id, Kind: relay.ReportCompleted, Message: "Done.", Result: "ok"})
			return err
		}, 6},
		// cursor, events, cursor and presence
		{"read_updates", func() error {
			u, err := db.ReadUpdates(ctx, "sender", 0)
			if err == nil && len(u.Updates) != 3 {
				t.Fatalf("read %d updates, want 3", len(u.Updates))
			}
			return err
		}, 3},
	}
	takeCounted()
	for _, tc := range cases {
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ran := takeCounted(); len(ran) != tc.want {
			t.Errorf("%s ran %d statements, want %d:\n%s", tc.name, len(ran), tc.want, strings.Join(ran, "\n"))
		}
	}
}

// TestApplyStatements holds applying another relay's messages to the
// statements it runs, as TestLifecycleStatements holds the tool calls: a
// task that arrives, its owner's states on the mirror of a task sent from
// here. An apply publishes the task as it wrote it (TestAppliedTaskPublishedAsStored)
// instead of reading it back.
func TestApplyStatements(t *testing.T) {
	db, sent := sentToCarol(t, countedDriver)
	ctx := context.Background()
	now := relay.FormatTime(time.Now())
	owner := func(status relay.TaskStatus, reports ...relay.Report) relay.Task {
		return ownerState(sent, status, relay.ViaChat, now, now, reports)
	}
	toAlice := func(typ string) *relay.MeshEvent { return eventFor("alice@relay-s", typ, now) }
	cases := []struct {
		name  string
		in    relay.RemoteApply
		want  int
		again bool // applied before
	}{
		// Each in its savepoint (SAVEPOINT and RELEASE, 2), as every
		// change is applied. Recorded as applied (which says whether it
		// was before), the task's peer row, the recipient is local, the
		// sender's name, its open tasks under the cap, insert (under its
		// own id, which is free), its peer row, the mark (nobody waits for
		// it: no presence)
		{"new task", fromPeer("m1", 1, arrivingFor(relay.NewID(), "bob"), nil), 2 + 8, false},
		// recorded as applied, the task's peer row, the task, its
		// reports, update, event, its number, the mark
		{"claimed", fromPeer("m2", 1, owner(relay.StatusClaimed), toAlice(relay.EventTaskClaimed)), 2 + 8, false},
		// the same and the report: its id free?, insert; not the mark,
		// which the claimed state already wrote (the peer row's read
		// brings it)
		{"completed", fromPeer("m3", 2, owner(relay.StatusCompleted, relay.Report{ID: relay.NewID(), Kind: relay.ReportCompleted, Message: "done", CreatedAt: now}),
			toAlice(relay.EventTaskCompleted)), 2 + 9, false},
		// a message applied before: its record alone
		{"again", fromPeer("m3", 2, owner(relay.StatusCompleted), nil), 2 + 1, true},
	}
	takeCounted()
	for _, tc := range cases {
		if ok, err := db.Mesh().ApplyRemote(ctx, tc.in); ok == tc.again || err != nil {
			t.Fatalf("%s: applied %v, %v", tc.name, ok, err)
		}
		if ran := takeCounted(); len(ran) != tc.want {
			t.Errorf("%s ran %d statements, want %d:\n%s", tc.name, len(ran), tc.want, strings.Join(ran, "\n"))
		}
	}
}
