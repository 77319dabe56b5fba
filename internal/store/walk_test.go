package store

import (
	"context"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestWalkKeptOnlyOnceCommitted: read_updates remembers how far it walked
// the journal only once its batch has committed. Here carol's event and
// dave's read share a batch that fails to commit, so the event's sequence
// is given back; dave's next event takes it, and his next read returns it.
// Kept at once, the walk would have read past that sequence.
func TestWalkKeptOnlyOnceCommitted(t *testing.T) {
	keepBatchesOpen(t)
	db := openGroup(t, "carol", "dave")
	ctx := context.Background()
	if _, err := db.ReadUpdates(ctx, "dave", 0); err != nil { // dave's cursor is current
		t.Fatal(err)
	}
	release := holdWriter(t, db)
	errs := make(chan error, 3)
	go func() {
		errs <- db.write(ctx, "carol's event", func(t *tx) error {
			return t.event("carol", relay.EventTaskCompleted, "task-1", "For carol.")
		})
	}()
	waitQueued(t, db, 2)
	go func() {
		_, err := db.ReadUpdates(ctx, "dave", 0)
		errs <- err
	}()
	waitQueued(t, db, 3)
	go func() { // fails the batch's COMMIT (a deferred foreign key)
		errs <- db.write(ctx, "orphan report", func(t *tx) error {
			if _, err := t.exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
				return err
			}
			_, err := t.exec(`INSERT INTO reports (id, task_id, kind, message, created_at) VALUES ('r1', 'no-such-task', 'progress', 'x', ?)`, t.ts)
			return err
		})
	}()
	waitQueued(t, db, 4)
	if err := release(); err == nil {
		t.Fatal("the batch committed; the test needs it to fail")
	}
	for range 3 {
		if err := <-errs; err == nil {
			t.Fatal("a write of the failed batch succeeded")
		}
	}

	if err := db.write(ctx, "dave's event", func(t *tx) error {
		return t.event("dave", relay.EventTaskCompleted, "task-2", "For dave.")
	}); err != nil {
		t.Fatal(err)
	}
	u, err := db.ReadUpdates(ctx, "dave", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Updates) != 1 || u.Updates[0].TaskID != "task-2" {
		t.Fatalf("dave read %+v; want his event for task-2", u.Updates)
	}
	// A read that committed is remembered: dave's next read starts after
	// the newest event.
	if got, want := db.walked["dave"], u.Updates[0].Sequence; got != want {
		t.Errorf("walked[dave] = %d, want %d", got, want)
	}
	// An agent deleted is forgotten.
	if err := db.DeleteAgent(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	if _, ok := db.walked["dave"]; ok {
		t.Error("walked still holds dave after his deletion")
	}
}
