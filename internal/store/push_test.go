package store_test

import (
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// The push stream keeps the newest relay.DefaultMaxPushEvents rows and
// trims the older ones every 100th row, so it never holds 100 rows or more
// beyond that; a cursor among the trimmed rows is told it may have missed
// some.
func TestPushStreamTrim(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	raw := rawDB(t, e.path)
	var inserted int64
	insertUpTo := func(seq int64) {
		t.Helper()
		tx, err := raw.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for ; inserted < seq; inserted++ {
			if _, err := tx.Exec(`INSERT INTO push_events (agent_slug, kind, task_id, title, from_slug, message, created_at)
				VALUES ('bob', 'task-progress', 'no-such-task', '', 'alice', 'Row.', '2026-03-14T12:00:00Z')`); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		upTo, oldest, rows int64
	}{
		{relay.DefaultMaxPushEvents + 99, 1, relay.DefaultMaxPushEvents + 99},
		{relay.DefaultMaxPushEvents + 100, 101, relay.DefaultMaxPushEvents},
		{relay.DefaultMaxPushEvents + 250, 201, relay.DefaultMaxPushEvents + 50},
	} {
		insertUpTo(tc.upTo)
		var oldest, rows int64
		if err := raw.QueryRow(`SELECT MIN(sequence), COUNT(*) FROM push_events`).Scan(&oldest, &rows); err != nil {
			t.Fatal(err)
		}
		if oldest != tc.oldest || rows != tc.rows {
			t.Errorf("after sequence %d: oldest %d, %d rows; want %d and %d", tc.upTo, oldest, rows, tc.oldest, tc.rows)
		}
	}
	b, err := e.db.PushEvents(e.ctx, "bob", 150, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !b.MayHaveMissed || len(b.Events) != 10 || b.Events[0].Sequence != 201 {
		t.Errorf("a cursor among the trimmed rows read %d events from %+v, mayHaveMissed %v; want 10 from 201, true", len(b.Events), b.Events, b.MayHaveMissed)
	}
}

// pushKinds reads slug's push events after the cursor as "kind title".
func pushKinds(t *testing.T, e *env, slug string, after int64) []string {
	t.Helper()
	b, err := e.db.PushEvents(e.ctx, slug, after, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, ev := range b.Events {
		out = append(out, ev.Kind+" "+ev.Title)
	}
	return out
}

// Push rows are written only for an agent whose stream was opened: from
// the moment OpenPush returns, with since the newest sequence then, and
// never again for it once it is deleted.
func TestPushWrittenForFollowedAgents(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ann", "bob", "cat")
	if _, err := e.db.OpenPush(e.ctx, "cat"); err != nil {
		t.Fatal(err)
	}
	forCat := e.post("bob", "cat", "for cat", 2)
	e.post("bob", "ann", "before", 2)
	if got := pushKinds(t, e, "ann", 0); len(got) != 0 {
		t.Fatalf("ann's stream holds %v before it was opened", got)
	}
	cursor, err := e.db.PushCursor(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	since, err := e.db.OpenPush(e.ctx, "ann")
	if err != nil || since != cursor || since == 0 {
		t.Fatalf("OpenPush = %d, %v; want the newest sequence %d", since, err, cursor)
	}
	task := e.post("bob", "ann", "after", 2)
	if _, err := e.db.CancelTask(e.ctx, "bob", task.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	want := []string{relay.PushTask + " after", relay.EventTaskCancelled + " after"}
	if got := pushKinds(t, e, "ann", since); !slices.Equal(got, want) {
		t.Errorf("ann's stream after %d = %v, want %v", since, got, want)
	}
	if again, err := e.db.OpenPush(e.ctx, "ann"); err != nil || again != since {
		t.Errorf("second OpenPush = %d, %v; want %d", again, err, since)
	}
	_, err = e.db.OpenPush(e.ctx, "nobody")
	wantCode(t, err, relay.EUnknownAgent)
	// A deleted agent is no longer followed: a new agent of the same name
	// starts unfollowed.
	if _, err := e.db.CancelTask(e.ctx, "bob", forCat.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteAgent(e.ctx, "cat"); err != nil {
		t.Fatal(err)
	}
	e.register("cat")
	deleted, err := e.db.PushCursor(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.post("bob", "cat", "new cat", 2)
	if got := pushKinds(t, e, "cat", deleted); len(got) != 0 {
		t.Errorf("the new cat's stream holds %v before it was opened", got)
	}
}

// Migration 0009 keeps every agent of an older database followed from the
// start, so a cursor a client kept across the upgrade misses nothing.
func TestMigrationFollowsExistingAgents(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ann", "bob")
	// Back to schema 8 (the triggers' bodies do not matter: 0009 replaces them).
	e.downgrade(undoTaskIndexes + undoAuthEpoch + `DROP TABLE push_agents; DROP TRIGGER push_task; DROP TRIGGER push_event;
		CREATE TRIGGER push_task AFTER INSERT ON tasks BEGIN SELECT 1; END;
		CREATE TRIGGER push_event AFTER INSERT ON events BEGIN SELECT 1; END;
		PRAGMA user_version = 8`)
	e.post("bob", "ann", "kept", 2)
	if got := pushKinds(t, e, "ann", 0); !slices.Equal(got, []string{relay.PushTask + " kept"}) {
		t.Errorf("ann's stream after the upgrade = %v, want the task", got)
	}
	if since, err := e.db.OpenPush(e.ctx, "ann"); err != nil || since != 0 {
		t.Errorf("OpenPush after the upgrade = %d, %v; want 0", since, err)
	}
}
