//go:build cgo

package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestBatchPreparesItsSavepointsOnce: the writes after a batch's first each
// run in a savepoint, and the batch prepares its SAVEPOINT and RELEASE once
// for all of them rather than compiling both again for every write.
func TestBatchPreparesItsSavepointsOnce(t *testing.T) {
	keepBatchesOpen(t)
	db := openWith(t, watchedDriver, "alice", "bob")
	ctx := context.Background()

	const posts = 6
	release := holdWriter(t, db)
	prepared.mu.Lock()
	prepared.savepoints = 0
	prepared.mu.Unlock()
	before := db.WriteStats()
	errs := make([]error, posts)
	var wg sync.WaitGroup
	for i := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprintf("batched %d", i), Instructions: "i"})
		}()
	}
	waitQueued(t, db, 1+posts)
	if err := release(); err != nil {
		t.Fatalf("held write: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if got := db.WriteStats().Batches - before.Batches; got != 1 {
		t.Fatalf("%d batches for one held batch, want 1", got)
	}
	prepared.mu.Lock()
	got := prepared.savepoints
	prepared.mu.Unlock()
	if got != 2 {
		t.Errorf("a batch of %d savepoints prepared %d savepoint statements, want 2 (SAVEPOINT and RELEASE once)", posts, got)
	}
}
