package store

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"
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
