package mesh

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// The review as a hostile neighbour: a trusted relay (its key pinned) and a
// NATS client with no relay key, each trying to take a name, confuse a
// label, reuse an id or make a genuine envelope vanish.

// Ensure a trusted relay that names itself with another relay's id takes
// none of that relay's names (slug@relay-id): a label never has the shape
// of a relay id, and the other relay's envelopes still apply.
func TestHostileRelayNamedAsAnotherRelaysID(t *testing.T) {
	a := startRelay(t, "relay-a\u200b", "") // no label: its agents are named by its id
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	c := startRelay(t, "relay-c", "", url)
	trustEachOther(t, b, c)
	createAgent(t, b, "bob")
	putRelayEntry(t, url, c.node.id, c.node.id, a.node.id.ID)
	eventually(t, "B sees C renamed as A's id", func() (bool, string) {
		r, _ := relayInfoOf(b, c.node.id.ID)
		return r.Name == a.node.id.ID && r.State == relay.RelayPending, fmt.Sprintf("%+v", r)
	})
	if _, err := b.node.SetTrust(t.Context(), c.node.id.ID, relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	first := queuedTask("operator", "bob", "From C, named as A's id")
	send(t, url, c.node.id, "c-1", b, relay.MeshChange{Task: first})
	if got := senderOf(t, b, first.ID); got != "operator@"+c.node.id.ID {
		t.Fatalf("C's operator on B = %q; want operator@%s", got, c.node.id.ID)
	}
	trustEachOther(t, a, b)
	second := queuedTask("operator", "bob", "From A")
	send(t, url, a.node.id, "a-1", b, relay.MeshChange{Task: second})
	if got := senderOf(t, b, second.ID); got != "operator@"+a.node.id.ID {
		t.Fatalf("A's operator on B = %q; want operator@%s", got, a.node.id.ID)
	}
}

// Ensure a trusted relay reaches no task of another relay by naming it: a
// new task whose id another relay's task has (that one arrived first) is
// stored under an id of B's, and a parent or conversation it names that is
// not its own task stays out of its task; a sender it names with another
// relay's label is its own agent.
func TestHostileIDsAndNamesOfOthers(t *testing.T) {
	a, b := aliceAndBob(t)
	url := a.node.InviteURL()
	c := startRelay(t, "relay-c", "", url)
	trustEachOther(t, b, c)
	ctx := t.Context()
	genuine := post(t, a, "alice", "bob", "A's task")
	arrives(t, b, genuine.ID)
	local, err := b.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "bob", Title: "B's own", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	squat := queuedTask("alice@relay-a", "bob", "C's task with A's id")
	squat.ID, squat.ParentTaskID, squat.ConversationID = genuine.ID, local.ID, local.ID
	send(t, url, c.node.id, "c-squat", b, relay.MeshChange{Task: squat})
	var mine relay.Task
	eventually(t, "C's task arrives under an id of B's", func() (bool, string) {
		ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 10})
		for _, s := range ts {
			if s.Title == squat.Title {
				mine, err = b.svc.Task(ctx, s.ID)
				return err == nil, fmt.Sprint(err)
			}
		}
		return false, fmt.Sprintf("%d tasks, %v, refused %v", len(ts), err, b.node.Refused())
	})
	if mine.ID == genuine.ID || mine.SenderSlug != "alice@relay-c" || mine.ParentTaskID != "" || mine.ConversationID == local.ID {
		t.Fatalf("C's task on B: id %s (A's %s), sender %q, parent %q, conversation %q", mine.ID, genuine.ID, mine.SenderSlug, mine.ParentTaskID, mine.ConversationID)
	}
	if got, err := b.svc.Task(ctx, genuine.ID); err != nil || got.Title != genuine.Title || got.SenderSlug != "alice" {
		t.Fatalf("A's task on B = %+v, %v", got, err)
	}
}

// Ensure a name stays with its relay when that relay is gone: relay A
// stops and its entry leaves the bucket (and B's view), then a trusted
// relay C shows alice: on B alice is still A's, C's is alice@relay-c.
func TestHostileNameOfAGoneRelay(t *testing.T) {
	srv := startServer(t, t.TempDir(), 0)
	t.Cleanup(srv.Shutdown)
	url := srv.ClientURL()
	a := startRelay(t, "relay-a", "", url)
	b := startRelay(t, "relay-b", "", url)
	c := startRelay(t, "relay-c", "", url)
	trustEachOther(t, a, b)
	trustEachOther(t, b, c)
	createAgent(t, a, "alice")
	knows(t, b, "alice", "relay-a")
	aID := a.node.id.ID
	a.stop()
	if err := bucketClient(t, url).Delete(t.Context(), agentKey(aID, "alice")); err != nil {
		t.Fatal(err)
	}
	putAgentEntry(t, url, c.node.id, "alice")
	knows(t, b, "alice@relay-c", "relay-c")
	if rid, err := b.db.Mesh().RemoteRelayOf(t.Context(), "alice"); err != nil || rid != aID {
		t.Fatalf("alice on B = %q, %v; want relay A's", rid, err)
	}
}

// Ensure a client with no relay key cannot rename a trusted relay: a relay
// entry with the relay's key but another name carries no signature of that
// key and is ignored; A stays trusted and its task arrives.
func TestHostileKeylessRenamesTrustedRelay(t *testing.T) {
	a, b := trustedBee(t)
	url := a.node.InviteURL()
	mallory := identity(t, t.TempDir(), "mallory")
	r := dirRelay{ID: a.node.id.ID, Name: "relay-b", PublicKey: a.node.id.PublicKey, At: time.Now().UnixMilli()}
	r.Sig = mallory.sign(r.signedBytes())
	raw, _ := json.Marshal(r)
	if _, err := bucketClient(t, url).Put(t.Context(), relayKey(a.node.id.ID), raw); err != nil {
		t.Fatal(err)
	}
	task := post(t, a, "operator", "bee", "Still trusted")
	if got := senderOf(t, b, task.ID); got != "operator@relay-a" {
		t.Fatalf("A's operator on B = %q", got)
	}
	if info, _ := relayInfoOf(b, a.node.id.ID); info.State != relay.RelayTrusted || info.PreviousName != "" {
		t.Fatalf("relay A on B: %+v", info)
	}
}

// Ensure a keyless client that shows another key for a trusted relay and
// then sends envelopes in its name with that key gets nothing applied, and
// the held ones of the real relay are delivered once the operator keeps
// the pinned key; the directory's forged key stays listed, not pinned.
func TestHostileForgedKeyThenSigned(t *testing.T) {
	a := startRelayWith(t, "relay-a", "", store.Options{}, func(o *Options) { o.Refresh = time.Hour })
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	trustEachOther(t, a, b)
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	fake := identity(t, t.TempDir(), "relay-a")
	putRelayEntry(t, url, a.node.id, fake, "relay-a")
	eventually(t, "A pending on B", func() (bool, string) {
		r, _ := relayInfoOf(b, a.node.id.ID)
		return r.State == relay.RelayPending, fmt.Sprintf("%+v", r)
	})
	if _, err := b.node.SetTrust(ctx, "relay-a", relay.RelayTrusted, Fingerprint(a.node.id.PublicKey)); err != nil {
		t.Fatal(err)
	}
	// Trusted with the pinned key while the forged one still shows: the
	// forger's envelope is refused at once, A's genuine one applied.
	forged := queuedTask("operator", "bob", "Forged")
	before := b.node.Refused()[RefusedSignature]
	send(t, url, Identity{ID: a.node.id.ID, priv: fake.priv}, "forged-2", b, relay.MeshChange{Task: forged})
	eventually(t, "the forged envelope refused", func() (bool, string) {
		return b.node.Refused()[RefusedSignature] == before+1, fmt.Sprint(b.node.Refused())
	})
	genuine := queuedTask("operator", "bob", "Genuine")
	send(t, url, a.node.id, "genuine-2", b, relay.MeshChange{Task: genuine})
	if got := senderOf(t, b, genuine.ID); got != "operator@relay-a" {
		t.Fatalf("A's operator = %q", got)
	}
	if _, err := b.svc.Task(ctx, forged.ID); err == nil {
		t.Fatal("the forged task was stored")
	}
}
