package mesh

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure the operator, and only the operator, gives a plain name to
// another relay's agent: every reference keeps naming the agent it named
// (a task, a worker's allowed senders, whose worker is reloaded), new tasks
// to the plain name go to the relay chosen, and the contest is shown the
// other way round.
func TestGivePlainName(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	c := startRelay(t, "relay-c", "", url)
	trustEachOther(t, a, b)
	trustEachOther(t, b, c)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, b, "alice", "relay-a")
	createAgent(t, c, "alice") // C does not trust A: A's alice keeps no slug from it
	knows(t, b, "alice@relay-c", "relay-c")
	ctx := t.Context()
	before := post(t, b, "bob", "alice", "For A's alice")
	arrives(t, a, before.ID)
	if _, err := b.db.SaveWorker(ctx, relay.WorkerConfig{AgentSlug: "bob", Harness: "custom", Command: "/bin/true", Workdir: t.TempDir(),
		AllowedSenders: []string{"alice", "operator"}}); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct{ slug, relay string }{{"bob", "relay-a"}, {"alice", "relay-b"}, {"alice@relay-c", "relay-c"}, {"carol", "relay-c"}} {
		if _, err := b.node.GiveName(ctx, bad.slug, bad.relay, func(context.Context, []string) error { return nil }); err == nil {
			t.Fatalf("give %s to %s: no error", bad.slug, bad.relay)
		}
	}
	var reloaded []string
	changes, err := b.node.GiveName(ctx, "alice", "relay-c", func(_ context.Context, ws []string) error {
		reloaded = append(reloaded, ws...)
		return nil
	})
	want := []relay.NameChange{{From: "alice", To: "alice@relay-a"}, {From: "alice@relay-c", To: "alice"}}
	if err != nil || !slices.Equal(changes, want) {
		t.Fatalf("give alice to relay-c = %+v, %v; want %+v", changes, err, want)
	}
	if !slices.Equal(reloaded, []string{"bob"}) {
		t.Fatalf("workers reloaded: %v; want bob once (after A's alice was renamed)", reloaded)
	}
	cfg, err := b.db.Worker(ctx, "bob")
	if err != nil || !slices.Equal(cfg.AllowedSenders, []string{"alice@relay-a", "operator"}) {
		t.Fatalf("bob's allowed senders = %v, %v; want A's alice by her new name", cfg.AllowedSenders, err)
	}
	if got, err := b.svc.Task(ctx, before.ID); err != nil || got.RecipientSlug != "alice@relay-a" {
		t.Fatalf("the task for A's alice = %q, %v", got.RecipientSlug, err)
	}
	knows(t, b, "alice", "relay-c")
	knows(t, b, "alice@relay-a", "relay-a")
	after := post(t, b, "bob", "alice", "For C's alice")
	arrives(t, c, after.ID)
	again := post(t, b, "bob", "alice@relay-a", "For A's alice again")
	arrives(t, a, again.ID)
	eventually(t, "B shows the contest the other way round", func() (bool, string) {
		st, err := b.node.Status(ctx)
		for _, n := range st.Names {
			if n.Slug == "alice" && n.HolderID == c.node.id.ID && len(n.Others) == 1 && n.Others[0].Name == "alice@relay-a" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v %v", st.Names, err)
	})
	// Given again: nothing changes.
	if changes, err := b.node.GiveName(ctx, "alice", c.node.id.ID, func(context.Context, []string) error { return nil }); err != nil || len(changes) != 0 {
		t.Fatalf("give alice to relay-c again = %+v, %v", changes, err)
	}
}
