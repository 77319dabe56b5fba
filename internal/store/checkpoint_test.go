package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// walSalt reads the salt in the WAL file's header, which SQLite changes
// each time the WAL starts over from its beginning, which it does only once
// a checkpoint has copied every frame into the database.
func walSalt(t *testing.T, db *DB) []byte {
	t.Helper()
	b, err := os.ReadFile(db.path + "-wal")
	if err != nil || len(b) < 32 {
		t.Fatalf("read the WAL header: %d bytes, %v", len(b), err)
	}
	return bytes.Clone(b[16:24])
}

// TestWriterCheckpointsWhenIdle: after idleCheckpointBatches lone writes
// the writer, idle, checkpoints the WAL itself, long before SQLite's
// automatic checkpoint would (1,000 pages); the next write then starts the
// WAL over. Without the writer's checkpoint these few writes would leave
// the WAL growing.
func TestWriterCheckpointsWhenIdle(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	if _, err := db.Heartbeat(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	before := db.checkpoints.Load()
	salt := walSalt(t, db)
	for range idleCheckpointBatches {
		if _, err := db.ReadUpdates(ctx, "bob", 0); err != nil { // a write of its own each time
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for db.checkpoints.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("the writer did not checkpoint once idle")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := db.Heartbeat(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(walSalt(t, db), salt) {
		t.Error("the WAL did not start over after the writer's checkpoint")
	}
}

// Ensure a claim handed a task runs before the writer's idle checkpoint,
// not after it. The checkpoint is a cgo call that keeps the writer's
// processor; a claim the last batch handed its task waits in that
// processor's run queue, and the runtime, asleep after an idle spell, took
// the processor back only after milliseconds (a mesh wake-up's p99 went
// 1 to 2 ms up whenever a checkpoint followed the hand-off). With one
// processor the order is exact: each hand-off's claim must have its
// answer before any checkpoint starts.
func TestHandedClaimRunsBeforeCheckpoint(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db := openGroup(t)
	ctx := context.Background()
	var (
		armed   atomic.Bool  // the next batch that leaves bob no waiting claim handed it a task
		pending atomic.Bool  // a claim handed a task has not returned yet
		before  atomic.Int64 // checkpoints that started while one had not
		after   atomic.Int64 // checkpoints that started after a hand-off's claim returned
	)
	testHookCommitted = func() {
		if armed.Load() && db.parkedFor("bob") == 0 {
			armed.Store(false)
			pending.Store(true)
		}
	}
	testHookCheckpoint = func() {
		if pending.Load() {
			before.Add(1)
		} else {
			after.Add(1)
		}
	}
	t.Cleanup(func() { testHookCommitted, testHookCheckpoint = nil, nil })
	// Three batches a round (a heartbeat, the claim's attempt, the post),
	// so that checkpoints, 32 batches apart, follow each kind in turn.
	for i := range 4 * idleCheckpointBatches {
		if _, err := db.Heartbeat(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		got := make(chan claimOutcome, 1)
		go func() {
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Wait: 20 * time.Second})
			pending.Store(false)
			got <- claimOutcome{task, err}
		}()
		waitParked(t, db, "bob", 1)
		armed.Store(true)
		posted, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprint("Task ", i), Instructions: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if o := answer(t, got); o.err != nil || o.task == nil || o.task.ID != posted.ID {
			t.Fatalf("round %d: the claim got %+v, %v; want %s", i, o.task, o.err, posted.ID)
		}
	}
	if n := before.Load(); n > 0 {
		t.Errorf("%d checkpoints started before the claim handed a task in the batch before them returned", n)
	}
	if after.Load() == 0 {
		t.Error("no checkpoint ran: the test saw nothing")
	}
}

// Ensure a caller that writes again as soon as it is answered (a polling
// agent, a mesh consumer applying one message at a time) does not put the
// idle checkpoint off: the writer finds no write waiting after each batch,
// and its one wait before the checkpoint lets one more write in at most. A
// yield before every checkpoint let that caller in nearly every time.
func TestSequentialWriterStillCheckpoints(t *testing.T) {
	for _, procs := range []int{1, runtime.GOMAXPROCS(0)} {
		t.Run(fmt.Sprint("procs", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			t.Cleanup(func() { testHookCheckpoint = nil }) // after the writer has stopped
			db := openGroup(t)
			ctx := context.Background()
			var last, gap atomic.Int64 // batches at the last checkpoint, the longest stretch
			testHookCheckpoint = func() {
				b := db.batches.Load()
				gap.Store(max(gap.Load(), b-last.Load()))
				last.Store(b)
			}
			if _, err := db.Heartbeat(ctx, "alice"); err != nil { // the writer sees the hook from here on
				t.Fatal(err)
			}
			before := db.checkpoints.Load()
			const writes = 50 * idleCheckpointBatches
			for range writes {
				if _, err := db.Heartbeat(ctx, "alice"); err != nil {
					t.Fatal(err)
				}
			}
			n := db.checkpoints.Load() - before
			t.Logf("%d checkpoints, longest stretch %d batches", n, gap.Load())
			if n < writes/(idleCheckpointBatches+1)-2 || gap.Load() > 2*idleCheckpointBatches {
				t.Errorf("%d back-to-back writes: %d idle checkpoints (want %d), up to %d batches apart (want %d)",
					writes, n, writes/(idleCheckpointBatches+1), gap.Load(), idleCheckpointBatches)
			}
		})
	}
}
