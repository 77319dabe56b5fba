//go:build cgo

// go-sqlite3's SQLITE_* constants and its authorizer exist only when it is
// built with cgo: without cgo (GOOS=windows or darwin vet) this file is left out.

package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// prepared records what SQLite asks the authorizer of a watchedDriver
// connection. SQLite asks only while it prepares a statement (or prepares it
// again), never while it runs one, so a statement taken from the cache as it
// is leaves no trace.
var prepared struct {
	mu   sync.Mutex
	seen []string
	// savepoints counts the SAVEPOINT, RELEASE and ROLLBACK TO statements
	// prepared, which seen leaves out.
	savepoints int
}

const watchedDriver = "sqlite3-watched"

// authorizerActions names the actions a prepared statement asks about.
var authorizerActions = map[int]string{
	sqlite3.SQLITE_DELETE: "DELETE", sqlite3.SQLITE_INSERT: "INSERT", sqlite3.SQLITE_READ: "READ",
	sqlite3.SQLITE_SELECT: "SELECT", sqlite3.SQLITE_UPDATE: "UPDATE", sqlite3.SQLITE_FUNCTION: "FUNCTION",
	sqlite3.SQLITE_PRAGMA: "PRAGMA",
}

func init() {
	sql.Register(watchedDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterAuthorizer(func(action int, a, b, _ string) int {
			// BEGIN, COMMIT and savepoints are short and never cached, and
			// the writer's checkpoint between batches (one in many
			// batches) is no hot statement; only the statements that do
			// the work are watched.
			checkpoint := action == sqlite3.SQLITE_PRAGMA && a == "wal_checkpoint"
			if action == sqlite3.SQLITE_SAVEPOINT {
				prepared.mu.Lock()
				prepared.savepoints++
				prepared.mu.Unlock()
			}
			if action != sqlite3.SQLITE_TRANSACTION && action != sqlite3.SQLITE_SAVEPOINT && !checkpoint {
				name, ok := authorizerActions[action]
				if !ok {
					name = fmt.Sprint(action)
				}
				prepared.mu.Lock()
				prepared.seen = append(prepared.seen, fmt.Sprintf("%s %s %s", name, a, b))
				prepared.mu.Unlock()
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	}})
}

// takePrepared returns what was prepared since the last call, in order.
func takePrepared() []string {
	prepared.mu.Lock()
	defer prepared.mu.Unlock()
	seen := prepared.seen
	prepared.seen = nil
	return seen
}

// TestHotStatementsStayPrepared: once each kind of call has run, running it
// again prepares no statement. SQLite prepares a statement again, parsing
// and planning it, when a parameter that shaped its plan is bound anew (see
// limitSQL); on the writer, which runs every write in turn, that cost more
// than running the statements.
func TestHotStatementsStayPrepared(t *testing.T) {
	db := openWith(t, watchedDriver, "sender", "worker")
	ctx := context.Background()
	if _, err := db.Mesh().SyncRemoteAgents(ctx, []relay.RemoteAgent{{Slug: "far", DisplayName: "far", ModelSlug: "m", RelayID: "aa00000000000000",
		RelayName: "relay-a", RelayLabel: "relay-a", Online: true}}); err != nil {
		t.Fatal(err)
	}
	token, err := db.IssueToken(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	// Both streams followed: every round writes push rows too.
	for _, s := range []string{"sender", "worker"} {
		if _, err := db.OpenPush(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	post := func(t *testing.T) relay.Task {
		t.Helper()
		task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "sender", RecipientSlug: "worker", Title: "Task", Instructions: "Do it."})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	claimed := func(t *testing.T, task *relay.Task, err error, want string) {
		t.Helper()
		if err != nil || task == nil || task.ID != want {
			t.Fatalf("claim = %+v, %v; want %s", task, err, want)
		}
	}
	report := func(t *testing.T, id, kind string) {
		t.Helper()
		if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "worker", TaskID: id, Kind: kind, Message: "Report.", Result: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		round func(t *testing.T)
	}{
		{"post, claim, progress, complete, read updates", func(t *testing.T) {
			id := post(t).ID
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker"})
			claimed(t, task, err, id)
			report(t, id, relay.ReportProgress)
			report(t, id, relay.ReportCompleted)
			if u, err := db.ReadUpdates(ctx, "sender", 0); err != nil || len(u.Updates) == 0 {
				t.Fatalf("read updates = %+v, %v", u, err)
			}
		}},
		{"claim from one sender, for a session", func(t *testing.T) {
			id := post(t).ID
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker", FromSenders: []string{"sender"}, ForSessions: []string{"s1"}})
			claimed(t, task, err, id)
			report(t, id, relay.ReportCompleted)
		}},
		{"a waiting claim handed the post", func(t *testing.T) {
			got := claimAsync(db, relay.ClaimInput{RecipientSlug: "worker", Wait: 20 * time.Second})
			waitParked(t, db, "worker", 1)
			id := post(t).ID
			o := answer(t, got)
			claimed(t, o.task, o.err, id)
			report(t, id, relay.ReportCompleted)
		}},
		{"heartbeat, lease, release, cancel", func(t *testing.T) {
			if _, err := db.Heartbeat(ctx, "worker"); err != nil {
				t.Fatal(err)
			}
			id := post(t).ID
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker"})
			claimed(t, task, err, id)
			if _, err := db.RenewLease(ctx, "worker", id, 600); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ReleaseTask(ctx, "worker", id, "Not mine."); err != nil {
				t.Fatal(err)
			}
			if _, err := db.CancelTask(ctx, "sender", id, "Not needed."); err != nil {
				t.Fatal(err)
			}
		}},
		{"a task from another relay: applied in a batch, its state sent and acknowledged", func(t *testing.T) {
			now := relay.FormatTime(time.Now())
			in := relay.RemoteApply{MsgID: relay.NewID(), FromRelay: "aa00000000000000", FromName: "relay-a", FromLabel: "relay-a", Mark: relay.MarkVerified,
				Change: relay.MeshChange{Seq: 1, Task: relay.Task{ID: relay.NewID(), SenderSlug: "far", RecipientSlug: "worker", Title: "From afar", Instructions: "x",
					Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now, Reports: []relay.Report{}}}}
			if res, err := db.Mesh().ApplyRemoteBatch(ctx, []relay.RemoteApply{in}); err != nil || !res[0].Applied {
				t.Fatalf("apply = %+v, %v", res, err)
			}
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker"})
			claimed(t, task, err, in.Change.Task.ID)
			report(t, task.ID, relay.ReportCompleted)
			if _, err := db.Mesh().OutboxHead(ctx); err != nil {
				t.Fatal(err)
			}
			out, err := db.Mesh().PendingOutbox(ctx, relay.OutboxQuery{Limit: 16})
			if err != nil || len(out) == 0 {
				t.Fatalf("outbox = %+v, %v", out, err)
			}
			if err := db.Mesh().AckOutbox(ctx, out, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"dashboard lists", func(t *testing.T) {
			if _, err := db.ListTasks(ctx, relay.TaskFilter{Agent: "worker", Limit: 20}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ListTasks(ctx, relay.TaskFilter{Statuses: []relay.TaskStatus{relay.StatusCompleted}}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ListEvents(ctx, relay.EventFilter{Agent: "sender", Limit: 20}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ListAgents(ctx, true); err != nil {
				t.Fatal(err)
			}
		}},
		{"token, task and push stream reads", func(t *testing.T) {
			if p, err := db.Authenticate(ctx, token); err != nil || p.Slug != "worker" {
				t.Fatalf("authenticate = %+v, %v", p, err)
			}
			id := post(t).ID
			if got, err := db.GetTask(ctx, "sender", id); err != nil || got.ID != id {
				t.Fatalf("get task = %+v, %v", got, err)
			}
			if b, err := db.SessionPushEvents(ctx, relay.LiveSession{AgentSlug: "worker"}, 0, 10); err != nil || len(b.Events) == 0 {
				t.Fatalf("push events = %+v, %v", b, err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The first rounds prepare and cache the statements.
			tc.round(t)
			tc.round(t)
			takePrepared()
			for range 3 {
				tc.round(t)
			}
			if seen := takePrepared(); len(seen) > 0 {
				slices.Sort(seen)
				seen = slices.Compact(seen)
				t.Errorf("later rounds prepared statements again; the authorizer was asked:\n%v", seen)
			}
		})
	}
}
