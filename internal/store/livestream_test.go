package store

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// openShifted is openGroup with a clock that the test moves on through
// the returned offset.
func openShifted(t *testing.T) (*DB, *atomic.Int64) {
	t.Helper()
	var offset atomic.Int64
	db, err := Open(filepath.Join(t.TempDir(), "relay.db"), Options{Now: func() time.Time {
		return time.Now().Add(time.Duration(offset.Load()))
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	registerAgents(t, db, "alice", "bob")
	return db, &offset
}

// postFor posts a task from alice to bob aimed at bob's session.
func postFor(t *testing.T, db *DB, session string) relay.Task {
	t.Helper()
	task, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "For " + session,
		Instructions: "Go.", TargetSession: session})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// seeStream records bob's session as a push stream would (open now).
func seeStream(t *testing.T, db *DB, session string) {
	t.Helper()
	if err := db.SeeLiveSession(context.Background(), relay.LiveSession{AgentSlug: "bob", ID: session}); err != nil {
		t.Fatal(err)
	}
}

// TestWorkersLeaveOnlySessionsWithAStream: only a push stream seen within
// relay.LiveStreamWindow makes a session live for delivery. A session that
// only posted (recorded for its name), or whose stream was last seen past
// the window, has its tasks claimed by the agent's unbound workers, at once
// and through a waiting claim; a stream seen now keeps them for it.
func TestWorkersLeaveOnlySessionsWithAStream(t *testing.T) {
	worker := relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaWorker, LeaveLiveSessions: true}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, db *DB, offset *atomic.Int64)
		claimed bool
	}{
		{"only posted", func(t *testing.T, db *DB, _ *atomic.Int64) {
			// bob's session S posts through its header (send in a chat
			// with no channel or monitor).
			if _, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "Ask",
				Instructions: "Q?", FromAgent: true, ReplySession: "sess-s"}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"stream seen now", func(t *testing.T, db *DB, _ *atomic.Int64) { seeStream(t, db, "sess-s") }, false},
		{"stream past the window", func(t *testing.T, db *DB, offset *atomic.Int64) {
			seeStream(t, db, "sess-s")
			offset.Add(int64(relay.LiveStreamWindow + time.Minute))
		}, true},
		{"stream past the window, then a post", func(t *testing.T, db *DB, offset *atomic.Int64) {
			seeStream(t, db, "sess-s")
			offset.Add(int64(relay.LiveStreamWindow + time.Minute))
			if _, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "Ask",
				Instructions: "Q?", FromAgent: true, ReplySession: "sess-s"}); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name+"/at once", func(t *testing.T) {
			db, offset := openShifted(t)
			tc.setup(t, db, offset)
			task := postFor(t, db, "sess-s")
			got, err := db.ClaimNext(context.Background(), worker)
			if err != nil {
				t.Fatal(err)
			}
			if tc.claimed != (got != nil && got.ID == task.ID) {
				t.Fatalf("worker claimed %+v; want claimed=%v", got, tc.claimed)
			}
		})
		t.Run(tc.name+"/waiting", func(t *testing.T) {
			db, offset := openShifted(t)
			tc.setup(t, db, offset)
			in := worker
			in.Wait = time.Minute
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan claimOutcome, 1)
			go func() {
				task, err := db.ClaimNext(ctx, in)
				got <- claimOutcome{task, err}
			}()
			waitParked(t, db, "bob", 1)
			task := postFor(t, db, "sess-s")
			if !tc.claimed {
				waitParked(t, db, "bob", 1) // woken, looked, waits again
				if stored, err := db.Task(context.Background(), task.ID); err != nil || stored.Status != relay.StatusQueued {
					t.Fatalf("task = %+v, %v; want queued for the live session", stored, err)
				}
				cancel()
			}
			o := answer(t, got)
			if o.err != nil || tc.claimed != (o.task != nil && o.task.ID == task.ID) {
				t.Fatalf("waiting worker got %+v, %v; want claimed=%v", o.task, o.err, tc.claimed)
			}
		})
	}
}

// TestReviewLiveSessionClaimTakesOtherSessionsTask: bob has two live
// sessions; a claim through session A takes the task aimed at A, not the
// older one aimed at B, nor is it handed B's task while it waits; a claim
// through no session leaves both; B's claim takes B's.
func TestReviewLiveSessionClaimTakesOtherSessionsTask(t *testing.T) {
	ctx := context.Background()
	db, _ := openShifted(t)
	seeStream(t, db, "sess-a")
	seeStream(t, db, "sess-b")
	forB := postFor(t, db, "sess-b")
	forA := postFor(t, db, "sess-a")
	claim := func(session string) *relay.Task {
		t.Helper()
		task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaChat, Session: session, LeaveLiveSessions: session == ""})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	if got := claim(""); got != nil {
		t.Fatalf("a claim through no session took %s; want the live sessions' tasks left to them", got.ID)
	}
	if got := claim("sess-a"); got == nil || got.ID != forA.ID {
		t.Fatalf("session A claimed %+v; want its own task %s (not B's %s)", got, forA.ID, forB.ID)
	}
	if got := claim("sess-a"); got != nil {
		t.Fatalf("session A then claimed %s; want nothing (B's task is B's)", got.ID)
	}

	// Waiting: A's claim is not handed a task for B, and is for a task
	// with no target.
	waiting := claimAsync(db, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaChat, Session: "sess-a", Wait: 30 * time.Second})
	waitParked(t, db, "bob", 1)
	forB2 := postFor(t, db, "sess-b")
	waitParked(t, db, "bob", 1)
	if stored, err := db.Task(ctx, forB2.ID); err != nil || stored.Status != relay.StatusQueued {
		t.Fatalf("B's second task = %+v, %v; want queued", stored, err)
	}
	open := postFor(t, db, "")
	if o := answer(t, waiting); o.err != nil || o.task == nil || o.task.ID != open.ID {
		t.Fatalf("A's waiting claim got %+v, %v; want the untargeted %s", o.task, o.err, open.ID)
	}
	if got := claim("sess-b"); got == nil || got.ID != forB.ID {
		t.Fatalf("session B claimed %+v; want %s", got, forB.ID)
	}
}

// TestHandOffPassesOverAClaimWhoseCallerLeft: a waiting claim whose
// caller has gone, not yet out of the registry, is not handed a post's
// task: the task stays queued, with no claim nor requeue on its timeline.
func TestHandOffPassesOverAClaimWhoseCallerLeft(t *testing.T) {
	db, _ := openShifted(t)
	ctx, cancel := context.WithCancel(context.Background())
	var posted relay.Task
	setHook(t, &testHookClaimLeaving, func() {
		// The caller has gone; the claim is still parked.
		posted = postFor(t, db, "")
	})
	got := make(chan claimOutcome, 1)
	go func() {
		task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaChat, Wait: time.Minute})
		got <- claimOutcome{task, err}
	}()
	waitParked(t, db, "bob", 1)
	cancel()
	if o := answer(t, got); o.err != nil || o.task != nil {
		t.Fatalf("the claim whose caller left got %+v, %v; want nothing", o.task, o.err)
	}
	stored, err := db.Task(context.Background(), posted.ID)
	if err != nil || stored.Status != relay.StatusQueued || stored.ClaimedAt != "" {
		t.Fatalf("task = %+v, %v; want queued, never claimed", stored, err)
	}
	events, err := db.ListEvents(context.Background(), relay.EventFilter{Agent: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == relay.EventTaskClaimed || e.Type == relay.EventTaskRequeued {
			t.Fatalf("event %s %q; want none", e.Type, e.Summary)
		}
	}
}

// TestClaimInputBounds: the claim's sender and session lists are bounded.
func TestClaimInputBounds(t *testing.T) {
	db, _ := openShifted(t)
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "s" + string(rune('a'+i%26)) + "x"
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   relay.ClaimInput
		ok   bool
	}{
		{"senders at the bound", relay.ClaimInput{FromSenders: many(relay.MaxWorkerSenders)}, true},
		{"senders past it", relay.ClaimInput{FromSenders: many(relay.MaxWorkerSenders + 1)}, false},
		{"sessions at the bound", relay.ClaimInput{ForSessions: many(relay.MaxClaimSessions)}, true},
		{"sessions past it", relay.ClaimInput{ForSessions: many(relay.MaxClaimSessions + 1)}, false},
		{"a session too long", relay.ClaimInput{ForSessions: []string{string(make([]byte, relay.MaxTargetSession+1))}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.RecipientSlug = "bob"
			_, err := db.ClaimNext(context.Background(), in)
			if tc.ok != (err == nil) || (err != nil && relay.ErrorCode(err) != relay.EInvalidRequest) {
				t.Fatalf("ClaimNext = %v; want ok=%v (else invalid_request)", err, tc.ok)
			}
		})
	}
}
