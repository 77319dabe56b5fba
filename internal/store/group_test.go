package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// openGroup opens a store on a fresh file with agents alice, bob and any
// more named.
func openGroup(t *testing.T, more ...string) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "relay.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	registerAgents(t, db, append([]string{"alice", "bob"}, more...)...)
	return db
}

// registerAgents registers an agent for each slug.
func registerAgents(t *testing.T, db *DB, slugs ...string) {
	t.Helper()
	for _, s := range slugs {
		if _, err := db.RegisterAgent(context.Background(), relay.RegisterInput{Slug: s, DisplayName: s, ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// keepBatchesOpen lifts the batch time bound for the test, so a batch
// behind a held write takes every write queued meanwhile however long the
// machine takes to queue them.
func keepBatchesOpen(t *testing.T) {
	old := maxBatchTime
	maxBatchTime = time.Hour
	t.Cleanup(func() { maxBatchTime = old })
}

// holdWriter runs a write that blocks the writer goroutine until the
// returned release is called; it returns once that write is running.
func holdWriter(t *testing.T, db *DB) (release func() error) {
	t.Helper()
	return holdWriterFailing(t, db, nil)
}

// holdWriterFailing is holdWriter whose held write then fails with fail
// (when not nil), after writing a row that must not survive.
func holdWriterFailing(t *testing.T, db *DB, fail error) (release func() error) {
	t.Helper()
	let, done := startHeldWrite(db, fail)
	return func() error { let(); return <-done }
}

// startHeldWrite runs a write that blocks the writer goroutine until let is
// called, then sets bob's display name to "held" (a row that must not
// survive when the write or its batch fails) and fails with fail when it is
// not nil. It returns once that write is running; done gets its answer,
// which comes only after its batch has committed.
func startHeldWrite(db *DB, fail error) (let func(), done <-chan error) {
	running, hold := make(chan struct{}), make(chan struct{})
	answer := make(chan error, 1)
	go func() {
		answer <- db.write(context.Background(), "hold", func(t *tx) error {
			close(running)
			<-hold
			if _, err := t.exec(`UPDATE agents SET display_name = 'held' WHERE slug = 'bob'`); err != nil {
				return err
			}
			return fail
		})
	}()
	<-running
	return func() { close(hold) }, answer
}

// waitQueued polls until n writes are handed to the writer and unanswered.
func waitQueued(t *testing.T, db *DB, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for db.waiting.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes waiting, want %d", db.waiting.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// countRows counts rows through a connection of its own, so it sees only
// what is committed.
func countRows(t *testing.T, db *DB, query string, args ...any) int {
	t.Helper()
	raw, err := sql.Open("sqlite3", dsn(db.path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

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

// TestManyConcurrentWriters runs 64 writers at once (run it with -race):
// every acknowledged write is committed (visible to another connection
// the moment it is answered), and batches form by themselves.
func TestManyConcurrentWriters(t *testing.T) {
	const writers, each = 64, 8
	db := openGroup(t)
	ctx := context.Background()
	raw, err := sql.Open("sqlite3", dsn(db.path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	before := db.WriteStats()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var err error
				switch i % 3 {
				case 0, 1:
					var task relay.Task
					task, err = db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprintf("w%d-%d", w, i), Instructions: "i"})
					if err == nil {
						var n int
						err = raw.QueryRow(`SELECT COUNT(*) FROM tasks WHERE id = ?`, task.ID).Scan(&n)
						if err == nil && n != 1 {
							err = fmt.Errorf("task %s answered but not committed", task.ID)
						}
					}
				case 2:
					_, err = db.Heartbeat(ctx, "bob")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after := db.WriteStats()
	writes := after.Writes - before.Writes
	if writes != writers*each {
		t.Fatalf("%d writes committed, want %d", writes, writers*each)
	}
	batches := after.Batches - before.Batches
	if batches < 1 || batches > writes {
		t.Fatalf("%d batches for %d writes", batches, writes)
	}
	t.Logf("%d writes in %d batches", writes, batches)
	want := writers * (each - each/3)
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks`); n != want {
		t.Fatalf("%d tasks, want %d", n, want)
	}
}

// TestLoneWriteIsNotDelayed: without load a write is a batch of one.
func TestLoneWriteIsNotDelayed(t *testing.T) {
	db := openGroup(t)
	for i := 0; i < 5; i++ {
		before := db.WriteStats()
		if _, err := db.Heartbeat(context.Background(), "alice"); err != nil {
			t.Fatal(err)
		}
		if got := db.WriteStats(); got.Batches != before.Batches+1 || got.Writes != before.Writes+1 {
			t.Fatalf("a lone write: stats %+v → %+v", before, got)
		}
	}
}

// TestCloseAnswersWaitingWrites: writes waiting when the store closes are
// answered (committed with the batch in progress, or ErrClosed).
func TestCloseAnswersWaitingWrites(t *testing.T) {
	db := openGroup(t)
	release := holdWriter(t, db)
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() { _, err := db.Heartbeat(context.Background(), "alice"); errs <- err }()
	}
	waitQueued(t, db, 5)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("write waiting at Close: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := db.Heartbeat(context.Background(), "alice"); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}

// TestAnswersMatchTheStoredTask: the answers built in memory from what the
// transaction wrote (post, claim, holder actions) equal the task read back.
func TestAnswersMatchTheStoredTask(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	stored := func(id string) relay.Task {
		t.Helper()
		var task relay.Task
		if err := db.read(ctx, "read back", func(tx *sql.Tx) (err error) {
			task, err = getTask(ctx, tx, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return task
	}
	parent, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "parent", Instructions: "i"})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		run  func() (relay.Task, error)
	}{
		{"post", func() (relay.Task, error) { return parent, nil }},
		{"post with everything", func() (relay.Task, error) {
			return db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "child <&>", Instructions: "“quoted”",
				RequiredCapabilities: []string{"text-input"}, Priority: 3, ParentTaskID: parent.ID})
		}},
		{"claim", func() (relay.Task, error) {
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: 60})
			if task == nil {
				return relay.Task{}, errors.Join(err, errors.New("nothing claimed"))
			}
			return *task, err
		}},
		{"renew lease", func() (relay.Task, error) { return db.RenewLease(ctx, "bob", parent.ID, 120) }},
		{"progress", func() (relay.Task, error) {
			return db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: parent.ID, Kind: relay.ReportProgress, Message: "half"})
		}},
		{"release", func() (relay.Task, error) { return db.ReleaseTask(ctx, "bob", parent.ID, "later") }},
		{"claim again (with reports)", func() (relay.Task, error) {
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaWorker})
			if task == nil {
				return relay.Task{}, errors.Join(err, errors.New("nothing claimed"))
			}
			return *task, err
		}},
		{"progress past the cap", func() (relay.Task, error) {
			var last relay.Task
			for i := 0; i <= MaxProgressReports; i++ {
				var err error
				if last, err = db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: parent.ID, Kind: relay.ReportProgress, Message: fmt.Sprintf("step %d", i)}); err != nil {
					return last, err
				}
			}
			if n := progressReports(last.Reports); n != MaxProgressReports {
				return last, fmt.Errorf("%d progress reports after the cap", n)
			}
			return last, nil
		}},
		{"completed", func() (relay.Task, error) {
			return db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: parent.ID, Kind: relay.ReportCompleted, Message: "done", Result: "42"})
		}},
	}
	for _, st := range steps {
		got, err := st.run()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want := stored(got.ID)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("%s answered\n%s\nstored\n%s", st.name, gj, wj)
		}
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

// WriteStats times the writer: a batch held open for a while counts at least
// that long as busy, its COMMIT counts within it, and a write refused alone
// (rolled back, nothing to commit) adds to busy but not to committing.
func TestWriteStatsTimeTheWriter(t *testing.T) {
	db := openGroup(t)
	before := db.WriteStats()
	release := holdWriter(t, db)
	const held = 20 * time.Millisecond
	time.Sleep(held) // the write holds the writer this long at least
	if err := release(); err != nil {
		t.Fatal(err)
	}
	after := db.WriteStats()
	busy, committing := after.Busy-before.Busy, after.Committing-before.Committing
	if after.Batches != before.Batches+1 || busy < held || committing <= 0 || committing > busy {
		t.Fatalf("after one held batch: %d batches, busy %s, committing %s; want 1 batch, busy ≥ %s, 0 < committing ≤ busy",
			after.Batches-before.Batches, busy, committing, held)
	}
	_, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "nobody", Title: "T", Instructions: "I"})
	if relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Fatalf("post to nobody = %v, want %s", err, relay.EUnknownAgent)
	}
	// A write refused alone is answered before its batch ends and is
	// counted.
	poll.Until(t, "the refused write's batch counted as busy", 10*time.Second,
		func() bool { return db.WriteStats().Busy > after.Busy })
	if refused := db.WriteStats(); refused.Batches != after.Batches || refused.Committing != after.Committing {
		t.Errorf("a refused write: %d more batches, committing +%s; want none and none",
			refused.Batches-after.Batches, refused.Committing-after.Committing)
	}
}
