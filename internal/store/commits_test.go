//go:build cgo

package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// readHead reads the outbox's head as the database has it now.
func readHead(db *DB) (int64, error) {
	var h int64
	err := db.r.QueryRowContext(context.Background(), `SELECT `+outboxHeadSQL).Scan(&h)
	return h, err
}

// headInDB is readHead, failing t on an error.
func headInDB(t *testing.T, db *DB) int64 {
	t.Helper()
	h, err := readHead(db)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOutboxHeadFromCommit holds OutboxHead to what the last commit left
// (the publisher asks after every change), without a statement of its own;
// when the writer could not read it, OutboxHead reads the database.
func TestOutboxHeadFromCommit(t *testing.T) {
	db := openWith(t, countedDriver, "alice", "bob")
	ctx := context.Background()
	syncCarol(t, db)
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
		if want := headInDB(t, db); h != want {
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

// TestOutboxHeadAfterFailedMarks: a commit that adds an outbox row but
// whose marks cannot be read (its auth_epoch row is gone) leaves OutboxHead
// reading the database, not at the head before it, and starts a new auth
// generation; once the marks read again, OutboxHead is the commit's again.
func TestOutboxHeadAfterFailedMarks(t *testing.T) {
	db := openWith(t, "", "alice", "bob")
	ctx := context.Background()
	row := func(t *tx) error {
		_, err := t.exec(`INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at) VALUES (lower(hex(randomblob(16))), 'p', 'x', ?)`, t.ts)
		return err
	}
	if err := db.write(ctx, "add a row", row); err != nil {
		t.Fatal(err)
	}
	before, err := db.Mesh().OutboxHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gen := db.auth.gen.Load()
	var epoch int64
	if err := db.write(ctx, "add a row, the marks unreadable", func(t *tx) error {
		if err := t.tx.QueryRowContext(t.ctx, `SELECT n FROM auth_epoch`).Scan(&epoch); err != nil {
			return err
		}
		if _, err := t.exec(`DELETE FROM auth_epoch`); err != nil {
			return err
		}
		return row(t)
	}); err != nil {
		t.Fatal(err)
	}
	h, err := db.Mesh().OutboxHead(ctx)
	if want := headInDB(t, db); err != nil || h != want || h <= before {
		t.Errorf("after a commit whose marks could not be read: OutboxHead = %d (%v), the database %d, before %d", h, err, want, before)
	}
	if db.auth.gen.Load() == gen {
		t.Error("a commit whose marks could not be read started no new auth generation")
	}
	if err := db.write(ctx, "mend the marks", func(t *tx) error {
		_, err := t.exec(`INSERT INTO auth_epoch (n) VALUES (?)`, epoch+1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if h := db.outboxHead.Load(); h != headInDB(t, db) {
		t.Errorf("the marks read again: the commit left %d, the database %d", h, headInDB(t, db))
	}
}

// TestOutboxHeadBeforeWake: by the time a commit answers or wakes anyone
// (testHookCommitted runs on the writer just before), OutboxHead answers
// that commit's head, so the publisher, woken by its changes, sees its rows.
func TestOutboxHeadBeforeWake(t *testing.T) {
	db := openWith(t, "", "alice", "bob")
	ctx := context.Background()
	syncCarol(t, db)
	// stale is written on the writer (so no t.Fatal there) and read once
	// the posts returned.
	var stale []string
	setHook(t, &testHookCommitted, func() {
		want, err := readHead(db)
		if err != nil {
			stale = append(stale, err.Error())
			return
		}
		if h, err := db.Mesh().OutboxHead(ctx); err != nil || h != want {
			stale = append(stale, fmt.Sprintf("OutboxHead %d (%v), committed %d", h, err, want))
		}
	})
	for range 3 {
		if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "carol", Title: "T", Instructions: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(stale) > 0 {
		t.Errorf("stale when the commit answers: %q", stale)
	}
}
