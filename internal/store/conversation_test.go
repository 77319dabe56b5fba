package store_test

import (
	"context"
	"path/filepath"
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
		batch, err := e.db.PushEvents(e.ctx, tc.agent, 0, 100)
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
