package store_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// progress makes n task-progress events for alice on one claimed task.
func progress(e *env, taskID string, n int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		e.report("bob", taskID, relay.ReportProgress, "step")
	}
}

func TestJournalCapAndMissedUpdates(t *testing.T) {
	e := newEnv(t, store.Options{MaxEvents: 3})
	task := e.sentTask()
	e.mustClaim("bob")      // event 1
	progress(e, task.ID, 4) // events 2..5; 1 and 2 are trimmed
	all, err := e.db.ListEvents(e.ctx, relay.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Sequence != 5 || all[2].Sequence != 3 {
		t.Fatalf("journal = %+v, want sequences 5, 4, 3", all)
	}

	u := e.updates("alice")
	if !u.MayHaveMissedUpdates || len(u.Updates) != 3 || u.Cursor != 5 {
		t.Fatalf("first read = %+v, want 3 updates, cursor 5, flagged", u)
	}
	u = e.updates("alice")
	if u.MayHaveMissedUpdates || len(u.Updates) != 0 || u.Cursor != 5 {
		t.Fatalf("second read = %+v, want nothing and no flag", u)
	}

	// bob reads nothing of his own, but the journal moved past his cursor:
	// flagged once, and the cursor jumps to just before the oldest event.
	u = e.updates("bob")
	if !u.MayHaveMissedUpdates || len(u.Updates) != 0 || u.Cursor != 2 {
		t.Fatalf("bob's first read = %+v, want flagged, cursor 2", u)
	}
	u = e.updates("bob")
	if u.MayHaveMissedUpdates || u.Cursor != 2 {
		t.Fatalf("bob's second read = %+v, want no flag", u)
	}
}

func TestCursorSemantics(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	e.mustClaim("bob")
	progress(e, task.ID, 4) // alice has 5 unread events: 1..5

	// A new agent starts at the current end of the journal.
	e.register("late")
	if u := e.updates("late"); len(u.Updates) != 0 || u.Cursor != 5 || u.MayHaveMissedUpdates {
		t.Fatalf("new agent's first read = %+v, want cursor 5", u)
	}

	read := func(limit int) relay.Updates {
		t.Helper()
		u, err := e.db.ReadUpdates(e.ctx, "alice", limit)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := read(2)
	if len(u.Updates) != 2 || u.Updates[0].Sequence != 1 || u.Cursor != 2 {
		t.Fatalf("limited read = %+v", u)
	}
	u = read(2)
	if len(u.Updates) != 2 || u.Updates[0].Sequence != 3 || u.Cursor != 4 {
		t.Fatalf("next page = %+v", u)
	}
	u = read(0) // default 25
	if len(u.Updates) != 1 || u.Updates[0].Sequence != 5 || u.Cursor != 5 {
		t.Fatalf("rest = %+v", u)
	}
	// Events for others do not move alice's cursor.
	if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "stop"); err != nil {
		t.Fatal(err)
	}
	if u := read(5); len(u.Updates) != 0 || u.Cursor != 5 {
		t.Fatalf("after an event for bob = %+v", u)
	}
	if u := e.updates("bob"); len(u.Updates) != 1 || u.Updates[0].Type != relay.EventTaskCancelled || u.Updates[0].RecipientSlug != "bob" {
		t.Fatalf("bob = %+v", u)
	}
	// Limits are clamped to 1..100.
	for _, limit := range []int{-1, 1000} {
		if _, err := e.db.ReadUpdates(e.ctx, "alice", limit); err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}
	_, err := e.db.ReadUpdates(e.ctx, "ghost", 0)
	wantCode(t, err, relay.EUnknownAgent)
}

func TestListEvents(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	e.mustClaim("bob")
	progress(e, task.ID, 3)                                                     // alice: 1..4
	if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "stop"); err != nil { // bob: 5
		t.Fatal(err)
	}
	checkList(t, e.ctx, e.db.ListEvents, func(ev relay.Event) int64 { return ev.Sequence }, []listCase[relay.EventFilter, int64]{
		{"newest first", relay.EventFilter{}, []int64{5, 4, 3, 2, 1}},
		{"agent", relay.EventFilter{Agent: "bob"}, []int64{5}},
		{"agent normalized", relay.EventFilter{Agent: " Alice"}, []int64{4, 3, 2, 1}},
		{"before", relay.EventFilter{Before: 4}, []int64{3, 2, 1}},
		{"before and limit", relay.EventFilter{Before: 5, Limit: 2}, []int64{4, 3}},
		{"limit clamped up", relay.EventFilter{Limit: -3}, []int64{5, 4, 3, 2, 1}},
	})
}
