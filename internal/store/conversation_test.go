package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// A task continues its parent's conversation one hop further; a task
// without a parent starts its own. Table: who posts what with which parent.
func TestConversationInheritsFromParent(t *testing.T) {
	e := newEnv(t, store.Options{})
	for _, s := range []string{"ann", "bob", "cat"} {
		e.register(s)
	}
	ids := map[string]string{}
	for _, tc := range []struct {
		name, from, to, parent string
		fromAgent              bool
		wantConv               string // name of the task whose id is the conversation
		wantHops, wantDepth    int
		code                   string
	}{
		{name: "root", from: "ann", to: "bob", wantConv: "root"},
		{name: "b1", from: "bob", to: "cat", parent: "root", fromAgent: true, wantConv: "root", wantHops: 1, wantDepth: 1},
		{name: "b2", from: "cat", to: "ann", parent: "b1", fromAgent: true, wantConv: "root", wantHops: 2, wantDepth: 2},
		{name: "sibling", from: "ann", to: "cat", parent: "root", wantConv: "root", wantHops: 1, wantDepth: 1},
		{name: "other", from: "cat", to: "bob", fromAgent: true, wantConv: "other"},
		{name: "b3", from: "ann", to: "bob", parent: "b2", fromAgent: true, wantConv: "root", wantHops: 3, wantDepth: 3},
		{name: "b4", from: "bob", to: "cat", parent: "b3", fromAgent: true, code: relay.EChainLimit},
		{name: "b4 by hand", from: "bob", to: "cat", parent: "b3", wantConv: "root", wantHops: 4, wantDepth: 4},
		{name: "to itself", from: "bob", to: "bob", parent: "b3", fromAgent: true, code: relay.ESelfTask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: tc.from, RecipientSlug: tc.to, Title: tc.name, Instructions: "i",
				ParentTaskID: ids[tc.parent], FromAgent: tc.fromAgent})
			if tc.code != "" {
				wantCode(t, err, tc.code)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids[tc.name] = task.ID
			stored := e.task(task.ID)
			for _, got := range []relay.Task{task, stored} {
				if got.ConversationID != ids[tc.wantConv] || got.Hops != tc.wantHops || got.Depth != tc.wantDepth {
					t.Fatalf("conversation %s hops %d depth %d, want %s (%s) hops %d depth %d",
						got.ConversationID, got.Hops, got.Depth, ids[tc.wantConv], tc.wantConv, tc.wantHops, tc.wantDepth)
				}
			}
		})
	}
	list, err := e.db.ListTasks(e.ctx, relay.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if full := e.task(s.ID); s.ConversationID != full.ConversationID || s.Hops != full.Hops {
			t.Errorf("summary %s: conversation %s hops %d, task has %s %d", s.Title, s.ConversationID, s.Hops, full.ConversationID, full.Hops)
		}
	}
}

// Migration 0007 gives the tasks of a schema-6 database their chain's
// conversation and hops equal to their depth.
func TestMigrationBackfillsConversations(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("ann")
	e.register("bob")
	root := e.post("ann", "bob", "root", 0)
	post := func(parent string) relay.Task {
		task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "ann", Title: "child", Instructions: "i", ParentTaskID: parent})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	child := post(root.ID)
	grand := post(child.ID)
	alone := e.post("bob", "ann", "alone", 0)
	// Back to schema 6: the columns 0007 adds and what 0009 to 0011 add are gone.
	e.downgrade(undoTaskIndexes + undoAuthEpoch + `ALTER TABLE tasks DROP COLUMN conversation_id; ALTER TABLE tasks DROP COLUMN hops;
		ALTER TABLE tasks DROP COLUMN target_session; DROP TABLE push_agents; PRAGMA user_version = 6`)
	for _, want := range []struct {
		task relay.Task
		conv string
		hops int
	}{{root, root.ID, 0}, {child, root.ID, 1}, {grand, root.ID, 2}, {alone, alone.ID, 0}} {
		got, err := e.db.Task(e.ctx, want.task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ConversationID != want.conv || got.Hops != want.hops {
			t.Errorf("%s: conversation %s hops %d, want %s %d", want.task.Title, got.ConversationID, got.Hops, want.conv, want.hops)
		}
	}
}

// Tasks imported from the upstream relay are in their chain's conversation.
func TestImportedChainIsOneConversation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := copyFixture(t, dir)
	if _, err := store.ImportUpstream(ctx, path, path, store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "relay.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const root, grandchild = "12858468-94cf-4ef5-a022-745e6480e474", "7981226c-05ea-4ce1-aab4-3bd2628cd8e3"
	got, err := db.Task(ctx, grandchild)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConversationID != root || got.Hops != 2 || got.Depth != 2 {
		t.Fatalf("grandchild: conversation %s hops %d depth %d, want %s, 2, 2", got.ConversationID, got.Hops, got.Depth, root)
	}
}

// Push events (task and update) carry their task's conversation.
func TestPushEventsCarryConversation(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("ann")
	e.register("bob")
	for _, s := range []string{"ann", "bob"} {
		if _, err := e.db.OpenPush(e.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	root := e.post("ann", "bob", "root", 0)
	child, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "ann", Title: "child", Instructions: "i", ParentTaskID: root.ID})
	if err != nil {
		t.Fatal(err)
	}
	e.mustClaim("ann") // task-claimed, an update for bob
	for _, tc := range []struct {
		agent, kind, task string
	}{
		{"bob", relay.PushTask, root.ID},
		{"ann", relay.PushTask, child.ID},
		{"bob", relay.EventTaskClaimed, child.ID},
	} {
		batch, err := e.db.SessionPushEvents(e.ctx, relay.LiveSession{AgentSlug: tc.agent}, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range batch.Events {
			if ev.Kind == tc.kind && ev.TaskID == tc.task {
				found = true
				if ev.ConversationID != root.ID {
					t.Errorf("%s's %s event for %s: conversation %q, want %s", tc.agent, tc.kind, tc.task, ev.ConversationID, root.ID)
				}
			}
		}
		if !found {
			t.Errorf("no %s event for %s in %s's stream: %+v", tc.kind, tc.task, tc.agent, batch.Events)
		}
	}
}

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

// TestSessionHopLimitIgnoresOlderParent: while a live session handles a
// task, naming an older task (one hand-off from the start) as
// parentTaskId does not reset the count: the post is one hand-off past
// whichever of the two is further, so a chat at the limit is refused
// however it names its parent.
func TestSessionHopLimitIgnoresOlderParent(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	sessions := map[string]string{"alice": "a-1", "bob": "b-1"}
	first, err := e.sessionPost("alice", "a-1", "bob", "ping 0", "")
	if err != nil {
		t.Fatal(err)
	}
	// Ping-pong until the task a session holds is at the limit.
	task := first
	for hop := 1; hop <= relay.DefaultChainLimit; hop++ {
		holder := task.RecipientSlug
		e.sessionClaim(holder, sessions[holder])
		if task, err = e.sessionPost(holder, sessions[holder], task.SenderSlug, fmt.Sprintf("ping %d", hop), ""); err != nil {
			t.Fatalf("hand-off %d: %v", hop, err)
		}
	}
	holder := task.RecipientSlug
	held := e.sessionClaim(holder, sessions[holder])
	if held.Hops != relay.DefaultChainLimit {
		t.Fatalf("held task at %d hops, want %d", held.Hops, relay.DefaultChainLimit)
	}
	// Older tasks the holder sent or received, each a valid parent: the
	// chat's first task, and a new one with no hand-offs at all.
	fresh := e.post(holder, task.SenderSlug, "unrelated", 0)
	for _, parent := range []string{first.ID, fresh.ID} {
		_, err := e.sessionPost(holder, sessions[holder], task.SenderSlug, "bounce", parent)
		if relay.ErrorCode(err) != relay.EChainLimit {
			t.Fatalf("post naming %s while holding %s at the limit: %v, want chain_limit", parent, held.ID, err)
		}
		msg := relay.ErrorMessage(err)
		for _, want := range []string{"This session is working on the task " + held.ID, "whichever parentTaskId it names"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
	}
	// Another session of the same agent is not held back by it.
	if got, err := e.sessionPost(holder, "other", task.SenderSlug, "elsewhere", fresh.ID); err != nil || got.Hops != 1 {
		t.Fatalf("another session naming a fresh parent: %+v %v, want 1 hop", got, err)
	}
}
