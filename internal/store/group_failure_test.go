package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestBatchFailureStaysWithItsWrite queues several writes behind a held
// writer so they commit as one batch; the failing ones are rolled back to
// their savepoints alone and only their callers see an error.
func TestBatchFailureStaysWithItsWrite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		firstFail error // the held write, first of the batch, fails too
	}{
		{"first write commits", nil},
		{"first write fails", errors.New("the first write's own failure")},
	} {
		t.Run(tc.name, func(t *testing.T) { testBatchFailure(t, tc.firstFail) })
	}
}

func testBatchFailure(t *testing.T, firstFail error) {
	keepBatchesOpen(t)
	db := openGroup(t)
	ctx := context.Background()
	changes, stop := db.Subscribe(256)
	defer stop()
	errPlain := errors.New("the write's own failure")

	type write struct {
		name string
		run  func() error
		want func(error) bool
	}
	posts := 6
	writes := []write{{
		name: "internal failure after an insert",
		run: func() error {
			return db.write(ctx, "failing write", func(t *tx) error {
				if _, err := t.exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, priority, status, created_at, updated_at)
					VALUES ('ghost-task', 'alice', 'bob', 'ghost', 'never', 2, 'queued', ?, ?)`, t.ts, t.ts); err != nil {
					return err
				}
				t.publish(relay.Change{Type: relay.ChangeTask, Task: &relay.TaskSummary{ID: "ghost-task"}})
				t.wakeUp("bob")
				return errPlain
			})
		},
		want: func(err error) bool { return errors.Is(err, errPlain) && !relay.IsDomain(err) },
	}, {
		name: "domain refusal",
		run: func() error {
			_, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "nobody", Title: "t", Instructions: "i"})
			return err
		},
		want: func(err error) bool { return relay.ErrorCode(err) == relay.EUnknownAgent },
	}, {
		name: "panic",
		run: func() error {
			return db.write(ctx, "panicking write", func(t *tx) error {
				if _, err := t.exec(`UPDATE agents SET display_name = 'broken' WHERE slug = 'alice'`); err != nil {
					return err
				}
				panic("boom")
			})
		},
		want: func(err error) bool { return err != nil && !relay.IsDomain(err) },
	}}
	for i := 0; i < posts; i++ {
		writes = append(writes, write{
			name: fmt.Sprintf("post %d", i),
			run: func() error {
				_, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprintf("batched %d", i), Instructions: "i"})
				return err
			},
			want: func(err error) bool { return err == nil },
		})
	}

	release := holdWriterFailing(t, db, firstFail)
	before := db.WriteStats()
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.run() }()
	}
	waitQueued(t, db, int64(1+len(writes)))
	// Nothing is answered or committed while the batch is held.
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks`); n != 0 {
		t.Fatalf("%d tasks committed before the batch ran", n)
	}
	if err := release(); !errors.Is(err, firstFail) {
		t.Fatalf("held write: %v, want %v", err, firstFail)
	}
	wg.Wait()

	for i, w := range writes {
		if !w.want(errs[i]) {
			t.Errorf("%s: error %v", w.name, errs[i])
		}
	}
	after := db.WriteStats()
	if got := after.Batches - before.Batches; got != 1 {
		t.Errorf("%d batches committed for one held batch, want 1", got)
	}
	committed := int64(posts)
	if firstFail == nil {
		committed++
	}
	if got := after.Writes - before.Writes; got != committed {
		t.Errorf("the batch committed %d writes, want %d", got, committed)
	}
	held := 0
	if firstFail == nil {
		held = 1
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM agents WHERE display_name = 'held'`); n != held {
		t.Errorf("the held write's update is committed %d times, want %d", n, held)
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks WHERE title LIKE 'batched %'`); n != posts {
		t.Errorf("%d batched posts committed, want %d", n, posts)
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks WHERE id = 'ghost-task'`); n != 0 {
		t.Error("the failed write's insert was committed")
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM agents WHERE display_name = 'broken'`); n != 0 {
		t.Error("the panicking write's update was committed")
	}
	for _, c := range drainChanges(changes) {
		if c.Task != nil && c.Task.ID == "ghost-task" {
			t.Error("the failed write's change was published")
		}
	}
	if !db.Healthy() {
		t.Error("a committed batch left the store unhealthy")
	}
}

func drainChanges(ch <-chan relay.Change) []relay.Change {
	var out []relay.Change
	for {
		select {
		case c := <-ch:
			out = append(out, c)
		default:
			return out
		}
	}
}

// TestGivenUpWriteLeavesTheBatch: a caller whose context ends while its
// write waits in a batch gets its context error; the rest commit.
func TestGivenUpWriteLeavesTheBatch(t *testing.T) {
	keepBatchesOpen(t)
	db := openGroup(t)
	release := holdWriter(t, db)
	gone, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() {
		_, err := db.PostTask(gone, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "given up", Instructions: "i"})
		errs <- err
	}()
	waitQueued(t, db, 2)
	go func() {
		_, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "kept", Instructions: "i"})
		errs <- err
	}()
	waitQueued(t, db, 3)
	cancel()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	var gotCancel, gotOK int
	for i := 0; i < 2; i++ {
		switch err := <-errs; {
		case err == nil:
			gotOK++
		case errors.Is(err, context.Canceled):
			gotCancel++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if gotOK != 1 || gotCancel != 1 {
		t.Fatalf("%d committed, %d cancelled; want 1 and 1", gotOK, gotCancel)
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks WHERE title = 'kept'`); n != 1 {
		t.Errorf("the kept post is committed %d times", n)
	}
	if !db.Healthy() {
		t.Error("a caller giving up marked the store unhealthy")
	}
}

// TestFailedCommitLeavesNothing: a batch whose COMMIT fails (a deferred
// foreign key, checked only at commit) answers every write in it with the
// error, keeps none of them, and the next write commits as usual.
func TestFailedCommitLeavesNothing(t *testing.T) {
	keepBatchesOpen(t)
	db := openGroup(t)
	ctx := context.Background()
	release := holdWriter(t, db)
	errs := make(chan error, 2)
	go func() {
		errs <- db.write(ctx, "orphan report", func(t *tx) error {
			if _, err := t.exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
				return err
			}
			_, err := t.exec(`INSERT INTO reports (id, task_id, kind, message, created_at) VALUES ('r1', 'no-such-task', 'progress', 'x', ?)`, t.ts)
			return err
		})
	}()
	go func() {
		_, err := db.Heartbeat(ctx, "bob")
		errs <- err
	}()
	waitQueued(t, db, 3)
	if err := release(); err == nil || !strings.Contains(err.Error(), "commit") {
		t.Fatalf("the held write answered %v; want the batch's commit error", err)
	}
	for range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Errorf("a write of the failed batch answered %v", err)
		}
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM reports`); n != 0 {
		t.Errorf("%d reports kept from the failed batch", n)
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM agents WHERE display_name = 'held'`); n != 0 {
		t.Error("the held write was kept")
	}
	if _, err := db.Heartbeat(ctx, "alice"); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	if !db.Healthy() {
		t.Error("unhealthy after a write that committed")
	}
}
