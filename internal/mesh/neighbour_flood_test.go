package mesh

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A hostile neighbour that B does not trust (pending) or has blocked, still
// admitted to the NATS server by the relay that embeds it, fills the share
// of envelopes B holds for it and keeps sending: what it sends past its
// share is refused, and B's inbox goes on — a trusted relay's task sent
// after the flood arrives.

// floodHeld publishes n signed tasks of relay id (named prefix-i) into
// relay to's inbox over h, as relay id itself would send them.
func floodHeld(t *testing.T, h *neighbour, id Identity, to, recipient, prefix string, n int) {
	t.Helper()
	js, err := h.nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range n {
		task := relay.Task{ID: relay.NewID(), SenderSlug: "eve", RecipientSlug: recipient, Title: fmt.Sprint(prefix, " ", i), Instructions: "x",
			Priority: 2, Status: relay.StatusQueued, CreatedAt: relay.FormatTime(now), UpdatedAt: relay.FormatTime(now)}
		if _, err := js.PublishAsync(subject(to), sealed(t, id, fmt.Sprint(prefix, "-", i), to, relay.MeshChange{Task: task})); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("the flood was not acknowledged")
	}
}

// heldFrom counts the envelopes r holds from relay id.
func heldFrom(t *testing.T, r *testRelay, id string) int {
	t.Helper()
	hs, err := r.db.Mesh().HeldEnvelopes(t.Context(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(hs)
}

// Ensure a relay B does not trust cannot stop B's inbox by filling its
// share of held envelopes: past the share its envelopes are refused
// (held-full) instead of being delivered again for ever while every later
// message waits behind them — neither while it is pending nor once B's
// operator blocked it (before, B's consumer waited on the 1001st envelope
// every 30 s and a trusted relay's tasks never arrived; blocking did not
// help, only trusting the flooder did).
func TestNeighbourFloodOfHeldEnvelopesStopsNoInbox(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	b := startRelay(t, "relay-b", "", a.node.InviteURL())
	c := startRelay(t, "relay-c", "", a.node.InviteURL())
	trustEachOther(t, a, b)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	cID := c.node.id.ID
	eventually(t, "B records C with its key", func() (bool, string) {
		r, ok := relayInfoOf(b, cID)
		return ok && r.Fingerprint != "" && r.State == relay.RelayPending, fmt.Sprintf("%+v", r)
	})
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	const share = 1000 // the per-relay bound of held envelopes

	floodHeld(t, h, c.node.id, b.node.id.ID, "bob", "pending", share+5)
	eventually(t, "B refuses what C sends past its share", func() (bool, string) {
		return b.node.Refused()["held-full"] >= 5, fmt.Sprint(b.node.Refused())
	})
	first := post(t, a, "alice", "bob", "after the flood of a pending relay")
	arrives(t, b, first.ID)
	if n := heldFrom(t, b, cID); n != share {
		t.Fatalf("B holds %d envelopes of C; want its share, %d", n, share)
	}

	if _, err := b.node.SetTrust(context.Background(), cID, relay.RelayBlocked, ""); err != nil {
		t.Fatal(err)
	}
	before := b.node.Refused()["held-full"]
	floodHeld(t, h, c.node.id, b.node.id.ID, "bob", "blocked", 5)
	eventually(t, "B refuses what blocked C sends past its share", func() (bool, string) {
		return b.node.Refused()["held-full"] >= before+5, fmt.Sprint(b.node.Refused())
	})
	second := post(t, a, "alice", "bob", "after the flood of a blocked relay")
	arrives(t, b, second.ID)
	if task := claims(t, b, "bob"); task.ID != first.ID {
		t.Fatalf("bob claimed %s (%q); want A's task %s", task.ID, task.Title, first.ID)
	}
}
