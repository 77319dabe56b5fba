package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
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
	return openWith(t, "", append([]string{"alice", "bob"}, more...)...)
}

// openWith opens a store in a fresh folder on the database/sql driver
// driver ("" for the relay's own), with agents registered.
func openWith(t testing.TB, driver string, agents ...string) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "relay.db"), Options{driver: driver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	registerAgents(t, db, agents...)
	return db
}

// registerAgents registers an agent for each slug.
func registerAgents(t testing.TB, db *DB, slugs ...string) {
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
	// Counted in waiting, a caller may not have reached the queue yet (a
	// loaded machine preempts it between the two): the writer would find
	// the queue empty and end the batch without it. So each is also seen
	// parked in write, at the queue or waiting for its answer.
	for db.waiting.Load() < n || parkedWrites(db) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes waiting, %d parked, want %d", db.waiting.Load(), parkedWrites(db), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// parkedWrites counts the goroutines blocked in db's write: at the queue
// (a select) or waiting for their answer.
func parkedWrites(db *DB) int64 {
	call := fmt.Sprintf("store.(*DB).write(%p", db)
	buf := make([]byte, 1<<20)
	for {
		if n := runtime.Stack(buf, true); n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var parked int64
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(g, call) && (strings.Contains(head, "[select") || strings.Contains(head, "[chan receive")) {
			parked++
		}
	}
	return parked
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

// TestRunnableWritersJoinTheBatch: callers that become runnable while a
// batch is open (here, woken by its first write) join it before it
// commits, instead of each waiting for a batch of its own. With one
// processor they can run only when the writer yields it; the scheduler
// may pick the writer first now and then, so one attempt in several must
// take them all.
func TestRunnableWritersJoinTheBatch(t *testing.T) {
	db := openGroup(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	const writers, attempts = 4, 10
	var got []WriteStats
	for range attempts {
		wake := make(chan struct{})
		errs := make(chan error, writers)
		for range writers {
			go func() {
				<-wake
				_, err := db.Heartbeat(ctx, "alice")
				errs <- err
			}()
		}
		before := db.WriteStats()
		if err := db.write(ctx, "wake the writers", func(*tx) error { close(wake); return nil }); err != nil {
			t.Fatal(err)
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		after := db.WriteStats()
		d := WriteStats{Batches: after.Batches - before.Batches, Writes: after.Writes - before.Writes}
		if d.Batches == 1 && d.Writes == writers+1 {
			return
		}
		got = append(got, d)
	}
	t.Fatalf("in %d attempts the %d woken writers never joined the batch that woke them: batches and writes %v", attempts, writers, got)
}
