package mesh

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Order is kept per task across relays: many messages are in flight at
// once, and a task's messages are applied in the order its relay made
// them, whatever order they reach the stream or the consumer in.

// Ensure a publish that fails in the middle of a window does not let a
// later message of its task be applied first: the owner's first message
// about a task (claimed) is lost on the way to NATS while the task's
// progress and completion, published after it, are stored; the sender's
// relay holds them back until the claim, published again, arrives, so its
// agent reads claimed, progress, completed, in that order, once each. The
// other tasks do not wait.
func TestTaskOrderAcrossAFailedPublish(t *testing.T) {
	srv := startServer(t, t.TempDir(), 0)
	t.Cleanup(func() { srv.Shutdown() })
	px := newDropProxy(t, srv.Addr().String())
	a := startRelay(t, "relay-a", "", srv.ClientURL())
	b := startRelay(t, "relay-b", "", px.url())
	aliceMeetsBob(t, a, b)
	knows(t, a, "bob", "relay-b")
	knows(t, b, "alice", "relay-a")
	ctx := t.Context()

	task := post(t, a, "alice", "bob", "Dropped once")
	arrives(t, b, task.ID)
	px.arm("Dropped once")
	claims(t, b, "bob")
	for _, kind := range []string{relay.ReportProgress, relay.ReportCompleted} {
		if _, err := b.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: kind, Message: kind}); err != nil {
			t.Fatal(err)
		}
	}
	// Another task goes both ways meanwhile.
	other := post(t, a, "alice", "bob", "Meanwhile")
	arrives(t, b, other.ID)
	if got := claims(t, b, "bob"); got.ID != other.ID {
		t.Fatalf("bob claimed %s; want %s", got.ID, other.ID)
	}
	evs := collect(t, a, "alice", 1)
	if evs[0].TaskID != other.ID || px.count() != 1 {
		t.Fatalf("alice's first update = %+v with %d publishes dropped; want the other task's claim while the first task waits", evs[0], px.count())
	}
	evs = collect(t, a, "alice", 3)
	if got := types(evs); len(got) != 3 || got[0] != relay.EventTaskClaimed || got[1] != relay.EventTaskProgress || got[2] != relay.EventTaskCompleted {
		t.Fatalf("alice's updates = %v; want claimed, progress, completed", got)
	}
	reaches(t, a, task.ID, relay.StatusCompleted)
	outboxesEmpty(t, a, b)
	time.Sleep(gapDelay) // a stray redelivery would land by now
	if more := readAll(t, a, "alice"); len(more) != 0 {
		t.Fatalf("more updates for alice: %v", types(more))
	}
	for reason, n := range a.node.Refused() {
		if n != 0 {
			t.Fatalf("A refused %d envelopes (%s); want none", n, reason)
		}
	}
}

// Ensure one message failing to apply in a batch leaves the others
// applied and loses nothing: the failing task is delivered again until it
// applies, its cancel waits for it, and each task and update is there once.
func TestApplyFailureInABatch(t *testing.T) {
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	raw := rawDB(t, b)
	if _, err := raw.Exec(`CREATE TRIGGER fail_boom BEFORE INSERT ON tasks WHEN NEW.title = 'Boom' BEGIN SELECT RAISE(ABORT, 'the disk said no'); END`); err != nil {
		t.Fatal(err)
	}
	first := post(t, a, "alice", "bob", "First")
	boom := post(t, a, "alice", "bob", "Boom")
	// Boom must leave A as a new task before its cancel: cancelled before
	// A's outbox sent it, the two would go as one message, a task B never
	// had arriving closed, which B refuses without trying to insert it.
	eventually(t, "B failed to apply Boom", func() (bool, string) {
		return b.node.failures.Load() > 0, fmt.Sprint(b.node.failures.Load())
	})
	if _, err := a.svc.CancelTask(ctx, "alice", boom.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	third := post(t, a, "alice", "bob", "Third")
	arrives(t, b, first.ID)
	arrives(t, b, third.ID)
	if _, err := b.svc.Task(ctx, boom.ID); err == nil {
		t.Fatal("the failing task is on B")
	}
	if _, err := raw.Exec(`DROP TRIGGER fail_boom`); err != nil {
		t.Fatal(err)
	}
	reaches(t, b, boom.ID, relay.StatusCancelled)
	outboxesEmpty(t, a, b)
	if ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 10}); err != nil || len(ts) != 3 {
		t.Fatalf("B's tasks = %d, %v; want 3, each once", len(ts), err)
	}
	if got := types(readAll(t, b, "bob")); len(got) != 1 || got[0] != relay.EventTaskCancelled {
		t.Fatalf("bob's updates = %v; want the one cancel", got)
	}
}

// Ensure a task's messages reaching the consumer out of order are applied
// in order: a later one waits for the earlier one, and one that waited too
// long is applied without it, after which the earlier one, arriving at
// last, adds its update but does not take the task's state back.
func TestOlderMessageAfterANewerOne(t *testing.T) {
	old := gapDeliveries
	gapDeliveries = 3
	t.Cleanup(func() { gapDeliveries = old })
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	js := jetStreamClient(t, a.node.InviteURL())
	task := post(t, a, "alice", "bob", "Across")
	arrives(t, b, task.ID)
	claimed := claims(t, b, "bob")
	outboxesEmpty(t, a, b)
	collect(t, a, "alice", 1) // task-claimed

	// What B would send as its next two messages about the task, made by
	// hand: the task completed, then blocked (reopened in between).
	mirror, err := b.db.Task(ctx, claimed.ID)
	if err != nil {
		t.Fatal(err)
	}
	mirror.ID = task.ID
	send := func(msg string, seq int64, status relay.TaskStatus, typ string) {
		t.Helper()
		m := mirror
		m.Status = status
		ev := &relay.MeshEvent{ID: msg, RecipientSlug: m.SenderSlug, Type: typ, Summary: msg, CreatedAt: relay.FormatTime(time.Now())}
		data := sealed(t, b.node.id, msg, a.node.id.ID, relay.MeshChange{Task: m, Event: ev, Seq: seq})
		if _, err := js.Publish(ctx, subject(a.node.id.ID), data, jetstream.WithMsgID(msg)); err != nil {
			t.Fatal(err)
		}
	}
	var next int64
	if err := rawDB(t, b).QueryRow(`SELECT out_seq FROM mesh_task_peers WHERE task_id = ?`, claimed.ID).Scan(&next); err != nil {
		t.Fatal(err)
	}
	send("later", next+2, relay.StatusBlocked, relay.EventTaskBlocked)
	eventually(t, "the later message applied after waiting", func() (bool, string) {
		got, err := a.svc.Task(ctx, task.ID)
		return err == nil && got.Status == relay.StatusBlocked, fmt.Sprint(got.Status, err)
	})
	send("earlier", next+1, relay.StatusCompleted, relay.EventTaskCompleted)
	evs := collect(t, a, "alice", 2)
	if evs[0].Type != relay.EventTaskBlocked || evs[1].Type != relay.EventTaskCompleted {
		t.Fatalf("alice's updates = %v; want blocked, then the late completed", types(evs))
	}
	if got, err := a.svc.Task(ctx, task.ID); err != nil || got.Status != relay.StatusBlocked {
		t.Fatalf("the task after the earlier message = %s, %v; want it still blocked", got.Status, err)
	}
	time.Sleep(gapDelay) // a stray redelivery would land by now
	if more := readAll(t, a, "alice"); len(more) != 0 {
		t.Fatalf("more updates for alice: %v", types(more))
	}
}

// rawDB opens r's database file beside its store (SQLite, through the
// driver the store registers), closed when the test ends.
func rawDB(t *testing.T, r *testRelay) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+filepath.Join(r.dir, "relay.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// Ensure a batch whose write fails as a whole (the database locked past
// the store's busy wait) is acknowledged in none of its messages: they are
// delivered again, and once the store can write, every task arrives, once.
func TestBatchWriteFailureIsDeliveredAgain(t *testing.T) {
	// B's failures are read from its log: its last error alone may be
	// another write's by then (a read of the directory syncing agents).
	var logs testkit.Buffer
	a := startRelay(t, "relay-a", "")
	b := startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}, a.node.InviteURL())
	aliceMeetsBob(t, a, b)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	lock, err := rawDB(t, b).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			_, _ = lock.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	const n = 4
	var ids []string
	for i := range n {
		ids = append(ids, post(t, a, "alice", "bob", fmt.Sprintf("Locked %d", i)).ID)
	}
	eventually(t, "B failed to write a batch", func() (bool, string) {
		return strings.Contains(logs.String(), `msg="mesh: apply"`), logs.String()
	})
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false
	for _, id := range ids {
		arrives(t, b, id)
	}
	outboxesEmpty(t, a, b)
	ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 50})
	if err != nil || len(ts) != n {
		t.Fatalf("B's tasks = %d, %v; want %d, each once", len(ts), err, n)
	}
}

// Ensure the publisher keeps at most pubWindow messages in flight: with
// every publish to an inbox lost on the way (so none is answered), a relay
// with more to send than the window has a window's worth out, the rest
// waiting in its outbox, however often it is asked to publish.
func TestPublishWindowIsBounded(t *testing.T) {
	old := pubWindow
	pubWindow = 3
	t.Cleanup(func() { pubWindow = old })
	srv := startServer(t, t.TempDir(), 0)
	t.Cleanup(func() { srv.Shutdown() })
	px := newDropProxy(t, srv.Addr().String())
	a := startRelay(t, "relay-a", "", srv.ClientURL())
	b := startRelay(t, "relay-b", "", px.url())
	aliceMeetsBob(t, a, b)
	knows(t, b, "alice", "relay-a")
	px.dropAll()
	out := func() int {
		b.node.pub.mu.Lock()
		defer b.node.pub.mu.Unlock()
		return b.node.pub.out()
	}
	const n = 10
	for i := range n {
		post(t, b, "bob", "alice", fmt.Sprintf("Windowed %d", i))
	}
	eventually(t, "a window of publishes out", func() (bool, string) {
		return out() >= pubWindow && px.count() >= pubWindow, fmt.Sprintf("%d out, %d dropped", out(), px.count())
	})
	_ = b.node.flush() // asked again: nothing more goes while the window is full
	if got := out(); got != pubWindow {
		t.Fatalf("%d publishes in flight; want the window, %d", got, pubWindow)
	}
	if depth, err := b.db.Mesh().OutboxDepth(t.Context()); err != nil || depth != n {
		t.Fatalf("B's outbox holds %d rows, %v; want all %d (none stored)", depth, err, n)
	}
}

// Ensure a state row that a deletion writes again is published then, not
// at the next rescan: bob renews his lease while the message of his claim
// is in flight (a change that writes no row, one waits), and deleting that
// message once NATS stored it writes the renewed state again, which
// leaves at once and reaches alice's relay.
func TestStateWrittenAgainIsPublished(t *testing.T) {
	oldDel, oldRescan := delDelay, rescanEvery
	// The claim stays in flight long enough to renew the lease under it,
	// and no rescan comes to pick up what the publisher missed.
	delDelay, rescanEvery = 2*time.Second, time.Hour
	t.Cleanup(func() { delDelay, rescanEvery = oldDel, oldRescan })
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	task := post(t, a, "alice", "bob", "Renewed in flight")
	arrives(t, b, task.ID)
	claims(t, b, "bob")
	reaches(t, a, task.ID, relay.StatusClaimed)
	sent, applied := b.node.published.Load(), a.node.applied.Load()
	if _, err := b.db.RenewLease(ctx, "bob", task.ID, 600); err != nil {
		t.Fatal(err)
	}
	// The claim's row is still there (its deletion waits delDelay), so the
	// renewal wrote none of its own: this is the case under test.
	if d, err := b.db.Mesh().OutboxDepth(ctx); err != nil || d != 2 {
		t.Fatalf("B's outbox after the renewal holds %d rows (%v); want the claim's two, in flight", d, err)
	}
	outboxesEmpty(t, b)
	eventually(t, "the renewed state applied on A", func() (bool, string) {
		return b.node.published.Load() == sent+1 && a.node.applied.Load() == applied+1,
			fmt.Sprintf("B published %d, A applied %d since the renewal", b.node.published.Load()-sent, a.node.applied.Load()-applied)
	})
}

// Ensure a burst larger than the window goes out whole without a rescan:
// the window fills, NATS's answers leave it full until the rows they
// stored are deleted, and the rows past it are read when it has room, not
// passed over as seen. (Found by a review: with a look at the head after
// deletions, the last rows of a burst waited for the 5 s rescan.)
func TestBurstBeyondWindowIsPublished(t *testing.T) {
	oldWin, oldDel, oldRescan := pubWindow, delDelay, rescanEvery
	pubWindow, delDelay, rescanEvery = 2, 300*time.Millisecond, time.Hour
	t.Cleanup(func() { pubWindow, delDelay, rescanEvery = oldWin, oldDel, oldRescan })
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	const n = 6
	var ids []string
	for i := range n {
		ids = append(ids, post(t, a, "alice", "bob", fmt.Sprintf("Burst %d", i)).ID)
	}
	for _, id := range ids {
		arrives(t, b, id)
	}
	outboxesEmpty(t, a)
}
