package store_test

// What a trusted relay may put in a new task is bounded as a local post
// is: its hop count, the conversation it joins, its sender's open tasks.

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

const relayB = "bb00000000000000"

// fromRelay applies task as relay from's message msg and returns the error.
func fromRelay(e *env, from, msg string, task relay.Task) error {
	_, err := e.db.Mesh().ApplyRemote(e.ctx, relay.RemoteApply{MsgID: msg, FromRelay: from, FromLabel: "relay-" + from[:1], Mark: relay.MarkVerified,
		Change: relay.MeshChange{Task: task}})
	return err
}

func newRemote(to, title string) relay.Task {
	return relay.Task{ID: relay.NewID(), SenderSlug: "alice", RecipientSlug: to, Title: title, Instructions: "x", Priority: 2, Status: relay.StatusQueued}
}

// Ensure a task's hop count and depth from another relay are bounded just
// past any hand-off limit: a count near an int's end wrapped around below
// the limit at the next hand-off, and the limit held no more in the whole
// conversation.
func TestRemoteHopsBounded(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	e.register("carol")
	for _, n := range []int{math.MaxInt, relay.MaxChainLimit + 5, -7} {
		task := newRemote("bob", fmt.Sprint("hops ", n))
		task.Hops, task.Depth = n, n
		if err := fromRelay(e, relayA, "m"+task.ID, task); err != nil {
			t.Fatal(err)
		}
		got := e.task(task.ID)
		want := min(max(n, 0), relay.MaxChainLimit+1)
		if got.Hops != want || got.Depth != want {
			t.Fatalf("hops and depth %d stored as %d and %d; want %d", n, got.Hops, got.Depth, want)
		}
		if e.mustClaim("bob").ID != task.ID {
			t.Fatal("claimed another task")
		}
		_, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "carol", Title: "hand-off", Instructions: "x",
			ParentTaskID: task.ID, FromAgent: true})
		if n > 0 {
			wantCode(t, err, relay.EChainLimit)
		} else if err != nil {
			t.Fatalf("a hand-off of a task at hop 0: %v", err)
		}
	}
}

// Ensure a conversation another relay names (one that started on a third
// relay, so no task here has its id) is that relay's here: a second relay
// naming it has its tasks in a conversation of their own, together, so a
// run of its task cannot read or change the first relay's tasks in it;
// and whichever relay names it first, the other's tasks are not split up
// (a relay that learnt the id from a hand-off named it first, and each of
// the conversation's own relay's later tasks started a conversation alone).
func TestRemoteConversationStaysWithItsRelay(t *testing.T) {
	for _, first := range []string{relayA, relayB} {
		t.Run(first, func(t *testing.T) { remoteConversationStays(t, first) })
	}
}

func remoteConversationStays(t *testing.T, first string) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	conv := relay.NewID() // started on a third relay
	inConv := func(from, title string) relay.Task {
		task := newRemote("bob", title)
		task.ConversationID = conv
		if err := fromRelay(e, from, "m"+task.ID, task); err != nil {
			t.Fatal(err)
		}
		return e.task(task.ID)
	}
	second := relayB
	if first == relayB {
		second = relayA
	}
	got := map[string][]relay.Task{}
	for i, from := range []string{first, second, first, second} {
		got[from] = append(got[from], inConv(from, fmt.Sprint("task ", i, " of ", from)))
	}
	for from, tasks := range got {
		if tasks[0].ConversationID != tasks[1].ConversationID {
			t.Fatalf("relay %s's tasks naming %s are in conversations %s and %s; want one", from, conv, tasks[0].ConversationID, tasks[1].ConversationID)
		}
	}
	if got[first][0].ConversationID != conv || got[second][0].ConversationID == conv {
		t.Fatalf("the first relay's tasks are in %s, the second's in %s; want %s the first's alone", got[first][0].ConversationID, got[second][0].ConversationID, conv)
	}
}

// Ensure a sender of another relay is held to the open tasks' cap, as a
// local sender is: past it, its new tasks are refused (open-tasks), not
// queued without end ahead of everyone else's.
func TestRemoteSenderHeldToOpenTaskCap(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	s, err := e.db.Settings(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.MaxOpenTasksPerSender = 3
	if _, err := e.db.UpdateSettings(e.ctx, s); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		task := newRemote("bob", fmt.Sprint("flood ", i))
		task.Priority = relay.PriorityUrgent
		err := fromRelay(e, relayA, fmt.Sprint("m", i), task)
		var refusal *relay.MeshRefusal
		switch {
		case i < 3 && err != nil:
			t.Fatalf("task %d under the cap: %v", i, err)
		case i >= 3 && (!errors.As(err, &refusal) || refusal.Reason != "open-tasks"):
			t.Fatalf("task %d past the cap: %v; want refused (open-tasks)", i, err)
		}
	}
	tasks, err := e.db.ListTasks(e.ctx, relay.TaskFilter{Agent: "bob", Limit: 50})
	if err != nil || len(tasks) != 3 {
		t.Fatalf("bob's tasks = %d, %v; want the 3 under the cap", len(tasks), err)
	}
}

// Ensure another relay's agent is not given a deleted agent's plain name
// while its tasks are kept: it gets a qualified one.
func TestRemoteAgentNotGivenADeletedAgentsName(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask() // alice to bob
	if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "x"); err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Mesh().SyncRemoteAgents(e.ctx, []relay.RemoteAgent{{Slug: "bob", DisplayName: "Bob", ModelSlug: "m",
		RelayID: relayA, RelayName: "relay-a", RelayLabel: "relay-a", Online: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.GetAgent(e.ctx, "bob"); relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Fatalf("bob after the sync: %v; want no agent of that name", err)
	}
	if _, err := e.db.GetAgent(e.ctx, "bob@relay-a"); err != nil {
		t.Fatalf("relay A's bob: %v; want it under bob@relay-a", err)
	}
}

// bobsTask is bob's task titled title (the one the test applied, under
// whatever id it went in).
func bobsTask(e *env, title string) relay.Task {
	e.t.Helper()
	tasks, err := e.db.ListTasks(e.ctx, relay.TaskFilter{Agent: "bob", Limit: 50})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, task := range tasks {
		if task.Title == title {
			return e.task(task.ID)
		}
	}
	e.t.Fatalf("bob has no task %q", title)
	return relay.Task{}
}

// Ensure a new task whose id another relay chose as an existing
// conversation's id goes in under an id of its own: kept, it was that
// conversation's first task here (a task's conversation is its own id
// when it names none), and a run of it read and changed the tasks of a
// conversation another relay brought here.
func TestRemoteTaskIDIsNoConversationHere(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	conv := relay.NewID() // started on a third relay; relay B learnt its id
	first := newRemote("bob", "A's")
	first.ConversationID = conv
	if err := fromRelay(e, relayA, "m1", first); err != nil {
		t.Fatal(err)
	}
	other := newRemote("bob", "B's, under the id of A's conversation")
	other.ID = conv
	if err := fromRelay(e, relayB, "m2", other); err != nil {
		t.Fatal(err)
	}
	got := bobsTask(e, other.Title)
	if got.ID == conv || got.ConversationID == conv {
		t.Fatalf("B's task went in as %s in conversation %s: A's conversation %s", got.ID, got.ConversationID, conv)
	}
}

// Ensure a relay's follow-up joins the conversation it brought here after
// its own tasks in it are pruned, while a hand-off of them is still open:
// this relay remembers whose the conversation is. Another relay naming it
// does not join it (carol's open hand-off stays out of its runs' reach).
func TestRemoteConversationKeptForItsRelayAfterPruning(t *testing.T) {
	for _, c := range []struct {
		name  string
		third bool // the conversation started on a third relay, not with A's task
	}{{"started by A's task", false}, {"started on a third relay", true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, store.Options{RetentionDays: 0.5})
			e.register("bob")
			e.register("carol")
			first := newRemote("bob", "A's")
			conv := first.ID
			if c.third {
				conv = relay.NewID()
				first.ConversationID = conv
			}
			if err := fromRelay(e, relayA, "m1", first); err != nil {
				t.Fatal(err)
			}
			e.mustClaim("bob")
			child, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "carol", Title: "hand-off", Instructions: "x", ParentTaskID: first.ID, FromAgent: true})
			if err != nil || child.ConversationID != conv {
				t.Fatalf("hand-off = %+v, %v; want it in conversation %s", child, err, conv)
			}
			e.report("bob", first.ID, relay.ReportCompleted, "done")
			e.clock.Advance(13 * time.Hour)
			if res, err := e.db.Sweep(e.ctx); err != nil || res.Pruned != 1 {
				t.Fatalf("sweep = %+v, %v; want A's task pruned", res, err)
			}
			for _, m := range []struct {
				from, msg, title string
				joins            bool
			}{{relayA, "m2", "A's follow-up", true}, {relayB, "m3", "B's, naming A's conversation", false}} {
				next := newRemote("bob", m.title)
				next.ConversationID = conv
				if err := fromRelay(e, m.from, m.msg, next); err != nil {
					t.Fatal(err)
				}
				got := bobsTask(e, m.title)
				if joined := got.ConversationID == conv; joined != m.joins {
					t.Fatalf("%s is in conversation %s; joined %s = %v, want %v", m.title, got.ConversationID, conv, joined, m.joins)
				}
			}
		})
	}
}

// Ensure migration 0025 gives each conversation whose first task is not
// here to the relay its tasks came from, when one relay alone sent them:
// that relay's next task joins it, another's starts its own.
func TestMigrateMeshConversations(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	conv := relay.NewID() // started on a third relay
	first := newRemote("bob", "A's")
	first.ConversationID = conv
	if err := fromRelay(e, relayA, "m1", first); err != nil {
		t.Fatal(err)
	}
	e.reopenAfter(undoMeshConversations + `PRAGMA user_version = 24;`)
	for _, m := range []struct {
		from, msg, title string
		joins            bool
	}{{relayB, "m2", "B's, naming A's conversation", false}, {relayA, "m3", "A's follow-up", true}} {
		next := newRemote("bob", m.title)
		next.ConversationID = conv
		if err := fromRelay(e, m.from, m.msg, next); err != nil {
			t.Fatal(err)
		}
		if joined := bobsTask(e, m.title).ConversationID == conv; joined != m.joins {
			t.Fatalf("%s joined %s = %v after the migration, want %v", m.title, conv, joined, m.joins)
		}
	}
}
