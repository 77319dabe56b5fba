package store_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
	b, err := e.db.SessionPushEvents(e.ctx, relay.LiveSession{AgentSlug: "bob"}, 150, 10)
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
	b, err := e.db.SessionPushEvents(e.ctx, relay.LiveSession{AgentSlug: slug}, after, 100)
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
	// A deleted agent is no longer followed, and its stream's rows go with
	// it: nobody reads them from the start of the stream.
	if _, err := e.db.CancelTask(e.ctx, "bob", forCat.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteAgent(e.ctx, "cat"); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := rawDB(t, e.path).QueryRow(`SELECT COUNT(*) FROM push_events WHERE agent_slug = 'cat'`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("the deleted cat's stream keeps %d rows (%v)", rows, err)
	}
	if n, err := e.db.OpenPush(e.ctx, "cat"); relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Errorf("OpenPush(deleted cat) = %d, %v; want unknown_agent", n, err)
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

// TestLiveSessions: a session is recorded with its name (an empty name
// keeps the known one), listed most recently seen first, dropped after the
// retention time and past the per-agent bound; bad ids and unknown agents
// are refused.
func TestLiveSessions(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	see := func(agent, id, name string) {
		t.Helper()
		if err := e.db.SeeLiveSession(e.ctx, relay.LiveSession{AgentSlug: agent, ID: id, Name: name}); err != nil {
			t.Fatalf("SeeLiveSession(%s, %s, %q): %v", agent, id, name, err)
		}
	}
	list := func(agent string) string {
		t.Helper()
		ss, err := e.db.LiveSessions(e.ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range ss {
			if s.AgentSlug != agent || s.LastSeen == "" {
				t.Errorf("session %+v: agent or last seen wrong", s)
			}
			out = append(out, s.ID+"="+s.Name)
		}
		return strings.Join(out, " ")
	}
	see("alice", "s-1", "release prep")
	e.clock.Advance(time.Minute)
	see("alice", "s-2", "")
	see("bob", "s-9", "bob's")
	if got, want := list("alice"), "s-2= s-1=release prep"; got != want {
		t.Fatalf("alice's sessions = %q, want %q", got, want)
	}
	e.clock.Advance(time.Minute)
	see("alice", "s-1", "") // seen again, the name kept
	if got, want := list("alice"), "s-1=release prep s-2="; got != want {
		t.Fatalf("after s-1 is seen again: %q, want %q", got, want)
	}
	see("alice", "s-1", "renamed")
	if got, want := list("alice"), "s-1=renamed s-2="; got != want {
		t.Fatalf("after the rename: %q, want %q", got, want)
	}

	for _, c := range []struct{ agent, id, name, code string }{
		{"alice", "", "", relay.EInvalidRequest},
		{"alice", "has space", "", relay.EInvalidRequest},
		{"alice", strings.Repeat("x", relay.MaxLiveSessionID+1), "", relay.EInvalidRequest},
		{"alice", "s-3", "bad\x07name", relay.EInvalidRequest},
		{"nobody", "s-3", "", relay.EUnknownAgent},
	} {
		err := e.db.SeeLiveSession(e.ctx, relay.LiveSession{AgentSlug: c.agent, ID: c.id, Name: c.name})
		if relay.ErrorCode(err) != c.code {
			t.Errorf("SeeLiveSession(%q, %q, %q) = %v, want %s", c.agent, c.id, c.name, err, c.code)
		}
	}

	// Not seen for the retention time: gone from the list.
	e.clock.Advance(relay.LiveSessionRetention + time.Hour)
	if got := list("alice"); got != "" {
		t.Fatalf("after the retention time: %q, want none", got)
	}
	// The bound: the most recently seen sessions are kept.
	for i := range relay.MaxLiveSessionsPerAgent + 5 {
		see("bob", fmt.Sprintf("b-%03d", i), "")
	}
	ss, err := e.db.LiveSessions(e.ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != relay.MaxLiveSessionsPerAgent || ss[0].ID != fmt.Sprintf("b-%03d", relay.MaxLiveSessionsPerAgent+4) {
		t.Fatalf("bob has %d sessions, newest %+v; want %d, newest b-%03d", len(ss), ss[0], relay.MaxLiveSessionsPerAgent, relay.MaxLiveSessionsPerAgent+4)
	}
}

// TestSessionPushEvents: the updates on a task posted through a live
// session reach that session's stream only; a task posted without a
// session reaches every stream; a task meant for a session (by id or by the
// name its stream told) reaches that session's stream only; a stream that
// names no session sees everything; and the cursor passes over what a
// session does not see.
func TestSessionPushEvents(t *testing.T) {
	e := aliceFollowed(t)
	fromS1, err := e.sessionPost("alice", "s-1", "bob", "asked by s-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if fromS1.ReplySession != "s-1" || e.task(fromS1.ID).ReplySession != "s-1" {
		t.Fatalf("reply session: posted %q, read %q; want s-1", fromS1.ReplySession, e.task(fromS1.ID).ReplySession)
	}
	plain := e.post("alice", "bob", "asked without a session", 2)
	for _, id := range []string{fromS1.ID, plain.ID} {
		got := e.mustClaim("bob")
		e.report("bob", got.ID, "completed", "done "+id)
	}
	for _, target := range []string{"s-2", "second chat", "s-1"} {
		if _, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "for " + target,
			Instructions: "x", TargetSession: target}); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{
		"asked by s-1:task-claimed", "asked by s-1:task-completed",
		"asked without a session:task-claimed", "asked without a session:task-completed",
		"for s-2:task", "for second chat:task", "for s-1:task",
	}
	for _, c := range []struct {
		name string
		s    relay.LiveSession
		want []string
	}{
		{"no session", relay.LiveSession{}, all},
		{"s-1", relay.LiveSession{ID: "s-1"}, []string{all[0], all[1], all[2], all[3], all[6]}},
		{"s-2 named second chat", relay.LiveSession{ID: "s-2", Name: "second chat"}, []string{all[2], all[3], all[4], all[5]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := e.aliceSees(c.s); got != strings.Join(c.want, ", ") {
				t.Fatalf("events\n got %s\nwant %s", got, strings.Join(c.want, ", "))
			}
		})
	}
	// read_updates still shows the agent everything.
	if u := e.updates("alice"); len(u.Updates) != 4 {
		t.Fatalf("read_updates has %d events, want the 4 updates", len(u.Updates))
	}

	// The cursor passes over hidden events, and More says a read stopped
	// at its limit even when it returned less.
	b, err := e.db.SessionPushEvents(e.ctx, relay.LiveSession{AgentSlug: "alice", ID: "s-3"}, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Events) != 0 || !b.More || b.Cursor == 0 {
		t.Fatalf("s-3's first 2 rows: %d events, more %v, cursor %d; want none, more, cursor past them", len(b.Events), b.More, b.Cursor)
	}
	full, err := e.db.SessionPushEvents(e.ctx, relay.LiveSession{AgentSlug: "alice"}, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if b.Cursor != full.Cursor {
		t.Fatalf("s-3's cursor %d, want %d (the second row's)", b.Cursor, full.Cursor)
	}
}

// TestSessionPushEventsOutliveTheirTask: a push row carries the sessions it
// is for (migration 0017), so a live session's stream stays filtered after
// the task is pruned; and a task meant for one session, with its
// cancellation, reaches that session's stream only.
func TestSessionPushEventsOutliveTheirTask(t *testing.T) {
	e := aliceFollowed(t)
	asked, err := e.sessionPost("alice", "s-1", "bob", "asked by s-1", "")
	if err != nil {
		t.Fatal(err)
	}
	e.mustClaim("bob")
	e.report("bob", asked.ID, "completed", "done")
	for _, target := range []string{"s-2", ""} {
		task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "for " + cmp.Or(target, "anyone"),
			Instructions: "x", TargetSession: target})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.CancelTask(e.ctx, "bob", task.ID, "not needed"); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		s    relay.LiveSession
		want string
	}{
		{"s-1", relay.LiveSession{ID: "s-1"}, "asked by s-1:task-claimed, asked by s-1:task-completed, for anyone:task, for anyone:task-cancelled"},
		{"s-2", relay.LiveSession{ID: "s-2"}, "for s-2:task, for s-2:task-cancelled, for anyone:task, for anyone:task-cancelled"},
		{"s-3", relay.LiveSession{ID: "s-3"}, "for anyone:task, for anyone:task-cancelled"},
		{"no session", relay.LiveSession{}, "asked by s-1:task-claimed, asked by s-1:task-completed, for s-2:task, for s-2:task-cancelled, for anyone:task, for anyone:task-cancelled"},
	}
	check := func(when string) {
		t.Helper()
		for _, c := range cases {
			if got := e.aliceSees(c.s); got != c.want {
				t.Errorf("%s, %s's stream:\n got %s\nwant %s", when, c.name, got, c.want)
			}
		}
	}
	check("with the tasks kept")
	e.clock.Advance(time.Duration(relay.DefaultRetentionDays*24)*time.Hour + time.Hour)
	swept, err := e.db.Sweep(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if swept.Pruned != 3 {
		t.Fatalf("pruned %d tasks, want 3", swept.Pruned)
	}
	check("once the tasks are pruned")
}

// TestMigrationCopiesPushSessions: migration 0017 gives the push rows
// written before it the sessions of their tasks, so the streams filter
// them as before; a row whose task was already gone reaches every session.
func TestMigrationCopiesPushSessions(t *testing.T) {
	e := aliceFollowed(t)
	if _, err := e.sessionPost("alice", "s-1", "bob", "asked by s-1", ""); err != nil {
		t.Fatal(err)
	}
	e.mustClaim("bob")
	if _, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "for s-2",
		Instructions: "x", TargetSession: "s-2"}); err != nil {
		t.Fatal(err)
	}
	gone := e.post("bob", "alice", "gone", 0)
	e.reopenAfter(undoMeshOrder(t) + undoWorkerPins + undoInsights + undoMeshWord(t) + undoRetiredAgents + undoLiveStreams + undoPushSessions(t) + `DELETE FROM tasks WHERE id = '` + gone.ID + `'; PRAGMA user_version = 16;`)
	for _, c := range []struct {
		session, want string
	}{
		{"s-1", "asked by s-1:task-claimed, gone:task"},
		{"s-2", "for s-2:task, gone:task"},
	} {
		if got := e.aliceSees(relay.LiveSession{ID: c.session}); got != c.want {
			t.Errorf("%s's stream after the migration: %s, want %s", c.session, got, c.want)
		}
	}
}

// aliceFollowed is a store with the agents alice and bob, alice's push
// stream followed.
func aliceFollowed(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	if _, err := e.db.OpenPush(e.ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	return e
}

// aliceSees lists the push events alice's live session s gets from the
// start, as "title:kind", comma-separated (all of them in one read).
func (e *env) aliceSees(s relay.LiveSession) string {
	e.t.Helper()
	s.AgentSlug = "alice"
	b, err := e.db.SessionPushEvents(e.ctx, s, 0, relay.DefaultPushBatch)
	if err != nil {
		e.t.Fatal(err)
	}
	if b.More {
		e.t.Errorf("More set on a short read")
	}
	var out []string
	for _, ev := range b.Events {
		out = append(out, ev.Title+":"+ev.Kind)
	}
	return strings.Join(out, ", ")
}
