package store_test

import (
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

const (
	relayA = "aa00000000000000"
	relayC = "cc00000000000000"
)

// remote is a directory agent of relay id (label: its relay's label).
func remote(id, label, slug string) relay.RemoteAgent {
	return relay.RemoteAgent{Slug: slug, DisplayName: "Agent " + slug, ModelSlug: "m", RelayID: id, RelayName: "relay-" + id[:1], RelayLabel: label, Online: true}
}

// namesOf maps each remote name to relay id/slug.
func namesOf(rn relay.RemoteNames) map[string]string {
	out := map[string]string{}
	for _, n := range rn.Names {
		out[n.Name] = n.RelayID + "/" + n.Slug
	}
	return out
}

// Ensure a remote agent's name is pinned when it is first given and no
// later directory view moves it: the first holder keeps the plain slug
// (also once it stops listing it), the second is slug@label (slug@id
// without a label), a local agent keeps its slug, and each contest names
// its holder.
func TestRemoteNamesArePinned(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	sync := func(as ...relay.RemoteAgent) relay.RemoteNames {
		t.Helper()
		rn, err := e.db.Mesh().SyncRemoteAgents(e.ctx, as)
		if err != nil {
			t.Fatal(err)
		}
		return rn
	}
	sync(remote(relayA, "relay-a", "alice"))
	for i, view := range [][]relay.RemoteAgent{
		{remote(relayC, "relay-c", "alice"), remote(relayA, "relay-a", "alice")}, // C listed first now
		{remote(relayC, "relay-c", "alice")},                                     // A no longer lists alice
		{remote(relayC, "", "alice"), remote(relayC, "", "bob")},                 // C lost its label; bob is local here
	} {
		rn := sync(view...)
		got := namesOf(rn)
		if got["alice"] != relayA+"/alice" || got["alice@relay-c"] != relayC+"/alice" {
			t.Fatalf("view %d: names %v", i, got)
		}
		if rn.Contests[0].Slug != "alice" || rn.Contests[0].HolderRelay != relayA || rn.Contests[0].Others[0].Name != "alice@relay-c" {
			t.Fatalf("view %d: contests %+v", i, rn.Contests)
		}
		if i == 2 && (got["bob@"+relayC] != relayC+"/bob" || rn.Contests[1].Slug != "bob" || rn.Contests[1].HolderRelay != "") {
			t.Fatalf("C's bob beside the local bob: names %v, contests %+v", got, rn.Contests)
		}
	}
	if rid, err := e.db.Mesh().RemoteRelayOf(e.ctx, "alice"); err != nil || rid != relayA {
		t.Fatalf("alice = %q, %v", rid, err)
	}
	if rid, err := e.db.Mesh().RemoteRelayOf(e.ctx, "bob"); err != nil || rid != "" {
		t.Fatalf("bob = %q, %v; want local", rid, err)
	}
}

// Ensure renaming a placeholder carries every reference along (tasks, the
// journal, workers' allowed senders), refuses a local agent and a name
// taken, and says which workers to reload.
func TestRenameRemoteAgent(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	if _, err := e.db.Mesh().SyncRemoteAgents(e.ctx, []relay.RemoteAgent{remote(relayA, "relay-a", "alice"), remote(relayC, "relay-c", "alice")}); err != nil {
		t.Fatal(err)
	}
	task := e.post("bob", "alice", "For A's alice", 0)
	if _, err := e.db.SaveWorker(e.ctx, relay.WorkerConfig{AgentSlug: "bob", Harness: "custom", Command: "/bin/true", Workdir: t.TempDir(),
		AllowedSenders: []string{"alice", "operator"}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ name, to, code string }{
		{"bob", "bob2", relay.EInvalidRequest},         // a local agent
		{"alice", "alice@relay-c", relay.EAgentExists}, // taken
		{"nobody", "x", relay.EUnknownAgent},
	} {
		if _, err := e.db.Mesh().RenameRemoteAgent(e.ctx, bad.name, bad.to); relay.ErrorCode(err) != bad.code {
			t.Fatalf("rename %s to %s = %v; want %s", bad.name, bad.to, err, bad.code)
		}
	}
	workers, err := e.db.Mesh().RenameRemoteAgent(e.ctx, "alice", "alice@relay-a")
	if err != nil || !slices.Equal(workers, []string{"bob"}) {
		t.Fatalf("rename = %v, %v; want bob's worker to reload", workers, err)
	}
	if workers, err = e.db.Mesh().RenameRemoteAgent(e.ctx, "alice@relay-c", "alice"); err != nil || len(workers) != 0 {
		t.Fatalf("second rename = %v, %v; want no worker", workers, err)
	}
	got, err := e.db.Task(e.ctx, task.ID)
	if err != nil || got.RecipientSlug != "alice@relay-a" {
		t.Fatalf("the task = %q, %v", got.RecipientSlug, err)
	}
	cfg, err := e.db.Worker(e.ctx, "bob")
	if err != nil || !slices.Equal(cfg.AllowedSenders, []string{"alice@relay-a", "operator"}) {
		t.Fatalf("allowed senders = %v, %v", cfg.AllowedSenders, err)
	}
	for name, want := range map[string]string{"alice": relayC, "alice@relay-a": relayA} {
		if rid, err := e.db.Mesh().RemoteRelayOf(e.ctx, name); err != nil || rid != want {
			t.Fatalf("%s = %q, %v; want %s", name, rid, err, want)
		}
	}
	if name, err := e.db.Mesh().PinnedName(e.ctx, relayA, "alice"); err != nil || name != "alice@relay-a" {
		t.Fatalf("A's alice is named %q, %v", name, err)
	}
}

// Ensure ids are their relay's in the store: the same message id from two
// relays is applied twice, a new task whose id a task here has is stored
// under another id (and sent back under its own), and a report id another
// task's report has is stored under one of its own.
func TestRemoteIDsScoped(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	mine := e.post("bob", "bob", "A task of this relay", 0)
	now := relay.FormatTime(e.clock.Now())
	apply := func(from, msg string, task relay.Task) bool {
		t.Helper()
		ok, err := e.db.Mesh().ApplyRemote(e.ctx, relay.RemoteApply{MsgID: msg, FromRelay: from, FromLabel: "relay-" + from[:1], Mark: relay.MarkVerified,
			Change: relay.MeshChange{Task: task}})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	fromA := relay.Task{ID: mine.ID, SenderSlug: "alice", RecipientSlug: "bob", Title: "A's, with this relay's task id", Instructions: "x",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now,
		Reports: []relay.Report{{ID: relay.NewID(), Kind: relay.ReportProgress, Message: "A's report", CreatedAt: now}}}
	fromC := fromA
	fromC.ID, fromC.Title = relay.NewID(), "C's, with A's report id"
	fromC.Reports = []relay.Report{{ID: fromA.Reports[0].ID, Kind: relay.ReportProgress, Message: "C's report", CreatedAt: now}}
	if !apply(relayA, "m1", fromA) || !apply(relayC, "m1", fromC) {
		t.Fatal("the same message id of two relays was not applied twice")
	}
	if apply(relayA, "m1", fromA) {
		t.Fatal("relay A's message applied again")
	}
	if got, err := e.db.Task(e.ctx, mine.ID); err != nil || got.Title != mine.Title || len(got.Reports) != 0 {
		t.Fatalf("this relay's task = %+v, %v", got, err)
	}
	ts, err := e.db.ListTasks(e.ctx, relay.TaskFilter{Agent: "bob", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var aliased string
	for _, s := range ts {
		if s.Title == fromA.Title {
			aliased = s.ID
		}
	}
	got, err := e.db.Task(e.ctx, aliased)
	if err != nil || aliased == mine.ID || got.SenderSlug != "alice@relay-a" || len(got.Reports) != 1 || got.Reports[0].ID != fromA.Reports[0].ID {
		t.Fatalf("A's task = %+v, %v", got, err)
	}
	if c, err := e.db.Task(e.ctx, fromC.ID); err != nil || len(c.Reports) != 1 || c.Reports[0].Message != "C's report" || c.Reports[0].ID == fromA.Reports[0].ID {
		t.Fatalf("C's task = %+v, %v; want its report under an id of its own", c, err)
	}
	// Its state goes back to relay A under A's id.
	if _, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", FromSenders: []string{"alice@relay-a"}}); err != nil {
		t.Fatal(err)
	}
	out, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	sent := false
	for _, it := range out {
		if it.ToRelay == relayA {
			sent = it.Change.Task.ID == mine.ID && it.Change.Task.Title == fromA.Title
		}
	}
	if !sent {
		t.Fatalf("outbox %+v; want A's task under A's id", out)
	}
}

// Ensure migration 0020 keeps a relay's mesh rows: names of earlier
// versions pinned to the relay and slug they name, applied and held
// messages under their relay, and task peers known by their own ids.
func TestMigrateMeshWord(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	task := e.post("bob", "bob", "crossed", 0)
	e.reopenAfter(undoMeshOrder(t) + undoWorkerPins + undoInsights + undoMeshWord(t) + `
		INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, registered_at, last_seen_at) VALUES
			('alice', 'agent', 'Alice', 'm', '[]', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
			('operator@relay-a', 'agent', 'operator@relay-a', '', '[]', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
		INSERT INTO mesh_agents (slug, relay_id, relay_name) VALUES ('alice', '` + relayA + `', 'relay-a'), ('operator@relay-a', '` + relayA + `', 'relay-a');
		INSERT INTO mesh_applied (msg_id, from_relay, task_id, mark, applied_at) VALUES ('m1', '` + relayA + `', '', 'verified', '2026-03-14T12:00:00.000Z');
		INSERT INTO mesh_held (msg_id, from_relay, reason, data, received_at) VALUES ('h1', '` + relayC + `', 'untrusted', x'7b7d', '2026-03-14T12:00:00.000Z');
		INSERT INTO mesh_task_peers (task_id, relay_id, side) VALUES ('` + task.ID + `', '` + relayA + `', 'sender');
		PRAGMA user_version = 19;`)
	for slug, want := range map[string]string{"alice": "alice", "operator": "operator@relay-a"} {
		if name, err := e.db.Mesh().PinnedName(e.ctx, relayA, slug); err != nil || name != want {
			t.Fatalf("A's %s after the migration = %q, %v; want %q", slug, name, err, want)
		}
	}
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, relay.RemoteApply{MsgID: "m1", FromRelay: relayA, Mark: relay.MarkVerified}); err != nil || ok {
		t.Fatalf("A's applied message after the migration = %v, %v; want recognised", ok, err)
	}
	if h, err := e.db.Mesh().HeldEnvelopes(e.ctx, relayC, "", 10); err != nil || len(h) != 1 || h[0].MsgID != "h1" {
		t.Fatalf("held after the migration = %+v, %v", h, err)
	}
	if _, err := e.db.CancelTask(e.ctx, "bob", task.ID, "done"); err != nil {
		t.Fatal(err)
	}
	if out, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10}); err != nil || len(out) == 0 || out[len(out)-1].Change.Task.ID != task.ID {
		t.Fatalf("the task's state after the migration = %+v, %v; want it sent to A under its id", out, err)
	}
}
