package mesh

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// seeGate is a relay's real store that parks the first SeeRelay of relay
// id after it has written (before the node caches what it returned), until
// release is closed: the ordering a loaded machine makes once in a while,
// made every time.
type seeGate struct {
	relay.MeshStore
	id      string
	first   atomic.Bool
	parked  chan struct{}
	release chan struct{}
	once    sync.Once
}

func newSeeGate(id string) *seeGate {
	return &seeGate{id: id, parked: make(chan struct{}), release: make(chan struct{})}
}

func (g *seeGate) SeeRelay(ctx context.Context, id, name, key string, autoTrust bool) (relay.MeshRelay, bool, error) {
	r, changed, err := g.MeshStore.SeeRelay(ctx, id, name, key, autoTrust)
	if id == g.id && g.first.CompareAndSwap(false, true) {
		close(g.parked)
		<-g.release
	}
	return r, changed, err
}

func (g *seeGate) open() { g.once.Do(func() { close(g.release) }) }

// wait waits until ch is closed, for at most 30 s.
func wait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// trustState is relay id's admission state in r's cache: what decides
// whether r lists its agents and sends to it.
func trustState(r *testRelay, id string) string {
	r.node.mu.Lock()
	defer r.node.mu.Unlock()
	return r.node.trust[id].State
}

// Ensure the operator trusting a relay while the directory watch is
// recording the same relay as pending keeps it trusted: the watch's cache
// write, coming after the trust, once put "pending" back over it, and A
// never listed B's agents (nor sent to B), refresh or not.
func TestTrustWhileDirectorySeesRelay(t *testing.T) {
	bDir := t.TempDir()
	bID := identity(t, bDir, "relay-b").ID
	gate := newSeeGate(bID)
	a := startRelayWith(t, "relay-a", "", store.Options{}, func(o *Options) {
		gate.MeshStore = o.Store
		o.Store = gate
	})
	t.Cleanup(gate.open) // before a stops: its directory watch may be parked
	b := startRelay(t, "relay-b", bDir, a.node.InviteURL())
	// A's directory watch sees relay-b, records it as pending in the store
	// and is parked before caching that.
	wait(t, "relay-a's directory watch to record relay-b", gate.parked)

	done := make(chan error, 1)
	go func() {
		_, err := a.node.SetTrust(context.Background(), bID, relay.RelayTrusted, "")
		done <- err
	}()
	// The trust is in the store and the cache while the watch is parked
	// (SetTrust itself then waits for the watch's sync to finish).
	eventually(t, "relay-a trusts relay-b", func() (bool, string) {
		st := trustState(a, bID)
		return st == relay.RelayTrusted, st
	})
	gate.open()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("trust relay-b: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SetTrust did not return")
	}
	if st := trustState(a, bID); st != relay.RelayTrusted {
		t.Fatalf("relay-a caches relay-b as %q after trusting it; want %q", st, relay.RelayTrusted)
	}
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
}

// Ensure a refresh repairs a cache of admission records that differs from
// the store: a trusted relay's agents come back within a refresh.
func TestRefreshRepairsTrustCache(t *testing.T) {
	a, b := trustedBee(t)
	bID := b.node.id.ID
	a.node.mu.Lock()
	r := a.node.trust[bID]
	r.State = relay.RelayPending
	a.node.trust[bID] = r
	a.node.mu.Unlock()
	if err := a.node.syncAgents(t.Context()); err != nil { // bee is dropped until a refresh
		t.Fatal(err)
	}
	knows(t, a, "bee", "relay-b")
	if st := trustState(a, bID); st != relay.RelayTrusted {
		t.Fatalf("relay-a caches relay-b as %q after a refresh; want %q", st, relay.RelayTrusted)
	}
}
