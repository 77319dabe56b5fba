//go:build cgo

package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestOutboxHeadFromCommit holds OutboxHead to what the last commit left
// (the publisher asks after every change), without a statement of its own;
// when the writer could not read it, OutboxHead reads the database.
func TestOutboxHeadFromCommit(t *testing.T) {
	db := openWith(t, countedDriver, "alice", "bob")
	ctx := context.Background()
	syncCarol(t, db)
	inDB := func() int64 {
		t.Helper()
		var h int64
		if err := db.r.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'mesh_outbox'), 0)`).Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	head := func(step string, statements int) int64 {
		t.Helper()
		takeCounted()
		h, err := db.Mesh().OutboxHead(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if ran := takeCounted(); len(ran) != statements {
			t.Errorf("%s: OutboxHead ran %d statements, want %d: %q", step, len(ran), statements, ran)
		}
		if want := inDB(); h != want {
			t.Errorf("%s: OutboxHead = %d, the database says %d", step, h, want)
		}
		return h
	}
	last := head("before any row", 0)
	if last != 0 {
		t.Fatalf("head %d before any outbox row, want 0", last)
	}
	post := func(to string) {
		t.Helper()
		if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: to, Title: "T", Instructions: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		post("carol") // a trigger adds the outbox row
		h := head(fmt.Sprintf("post %d to another relay", i+1), 0)
		if h <= last {
			t.Errorf("post %d to another relay: head %d, not past %d", i+1, h, last)
		}
		last = h
	}
	post("bob")
	if h := head("post to a local agent", 0); h != last {
		t.Errorf("a local post moved the head %d → %d", last, h)
	}
	db.outboxHead.Store(-1) // as after a commit whose read failed
	if h := head("not known", 1); h != last {
		t.Errorf("read from the database: %d, want %d", h, last)
	}
}
