package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// sessionPost posts a task from one agent's live session (its own token).
func (e *env) sessionPost(from, session, to, title, parent string) (relay.Task, error) {
	e.t.Helper()
	return e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "Do " + title + ".",
		ParentTaskID: parent, FromAgent: true, ReplySession: session})
}

// sessionClaim claims slug's next task through its live session.
func (e *env) sessionClaim(slug, session string) relay.Task {
	e.t.Helper()
	task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: slug, Via: relay.ViaChat, Session: session})
	if err != nil || task == nil {
		e.t.Fatalf("claim for %s in session %s: %v %v", slug, session, task, err)
	}
	return *task
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
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	if _, err := e.db.OpenPush(e.ctx, "alice"); err != nil {
		t.Fatal(err)
	}
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
	read := func(s relay.LiveSession) []string {
		t.Helper()
		s.AgentSlug = "alice"
		b, err := e.db.SessionPushEvents(e.ctx, s, 0, relay.DefaultPushBatch)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range b.Events {
			out = append(out, ev.Title+":"+ev.Kind)
		}
		if b.More {
			t.Errorf("More set on a short read")
		}
		return out
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
			if got := read(c.s); strings.Join(got, ", ") != strings.Join(c.want, ", ") {
				t.Fatalf("events\n got %v\nwant %v", got, c.want)
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
	full, err := e.db.PushEvents(e.ctx, "alice", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if b.Cursor != full.Cursor {
		t.Fatalf("s-3's cursor %d, want %d (the second row's)", b.Cursor, full.Cursor)
	}
}

// TestSessionPostContinuesItsTask: a post from a live session that is
// handling a task (claimed through it, not finished) continues that task's
// conversation unless it names a parent; so two live chats handing work to
// each other stop at the hand-off limit with a message that says why.
func TestSessionPostContinuesItsTask(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob", "carol")
	first, err := e.sessionPost("alice", "a-1", "bob", "start", "")
	if err != nil {
		t.Fatal(err)
	}
	held := e.sessionClaim("bob", "b-1")
	if held.ID != first.ID {
		t.Fatalf("claimed %s, want %s", held.ID, first.ID)
	}
	other := e.post("carol", "bob", "other work", 2)

	for _, c := range []struct {
		name, from, session, parent string
		wantParent                  string
		wantHops                    int
	}{
		{"the handling session", "bob", "b-1", "", first.ID, 1},
		{"a named parent wins", "bob", "b-1", other.ID, other.ID, 1},
		{"another session of the agent", "bob", "b-2", "", "", 0},
		{"no session", "bob", "", "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.sessionPost(c.from, c.session, "carol", c.name, c.parent)
			if err != nil {
				t.Fatal(err)
			}
			if got.ParentTaskID != c.wantParent || got.Hops != c.wantHops {
				t.Fatalf("parent %q hops %d, want %q hops %d", got.ParentTaskID, got.Hops, c.wantParent, c.wantHops)
			}
		})
	}
	// Once the task is finished, the session's posts start afresh.
	e.report("bob", first.ID, "completed", "done")
	after, err := e.sessionPost("bob", "b-1", "carol", "after", "")
	if err != nil || after.ParentTaskID != "" || after.Hops != 0 {
		t.Fatalf("after the task is done: %+v %v, want a new conversation", after, err)
	}

	// Ping-pong between two live chats, no parentTaskId anywhere: each
	// claims what the other sent and posts back, until the limit.
	e2 := newEnv(t, store.Options{})
	e2.agents("alice", "bob")
	task, err := e2.sessionPost("alice", "a-1", "bob", "ping 0", "")
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]string{"alice": "a-1", "bob": "b-1"}
	limit := relay.DefaultChainLimit
	for hop := 1; ; hop++ {
		holder := task.RecipientSlug
		e2.sessionClaim(holder, sessions[holder])
		task, err = e2.sessionPost(holder, sessions[holder], task.SenderSlug, fmt.Sprintf("ping %d", hop), "")
		if hop <= limit {
			if err != nil || task.Hops != hop {
				t.Fatalf("hand-off %d: %+v %v", hop, task, err)
			}
			continue
		}
		if relay.ErrorCode(err) != relay.EChainLimit {
			t.Fatalf("hand-off %d past the limit %d: %v, want chain_limit", hop, limit, err)
		}
		msg := relay.ErrorMessage(err)
		for _, want := range []string{"This session is working on the task", "continues that task's conversation",
			fmt.Sprintf("would be %d hand-offs away", hop), fmt.Sprintf("the limit is %d", limit)} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
		return
	}
}

// TestSessionCannotTargetItself: a live session's post to its own agent
// naming its own session (by id or by the name it told) is refused; naming
// another session of the agent is allowed.
func TestSessionCannotTargetItself(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice")
	if err := e.db.SeeLiveSession(e.ctx, relay.LiveSession{AgentSlug: "alice", ID: "a-1", Name: "main chat"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target, code string
	}{
		{"a-1", relay.ESelfTask},
		{"main chat", relay.ESelfTask},
		{"a-2", ""},
	} {
		_, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "alice", Title: "to " + c.target,
			Instructions: "x", FromAgent: true, ReplySession: "a-1", TargetSession: c.target})
		if relay.ErrorCode(err) != c.code {
			t.Errorf("target %q: %v, want %q", c.target, err, c.code)
		}
	}
}
