package store_test

import (
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
