package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Ensure the operator of relay A (slug operator, as on every relay) can
// post to an agent on relay B: B stores the sender as operator@relay-a,
// never as its own operator, and A's task completes with A's operator
// reading task-claimed and task-completed once each.
func TestOperatorCrossRelayTask(t *testing.T) {
	a, b := trustedBee(t)
	ctx := t.Context()
	posted := post(t, a, "operator", "bee", "From the operator")
	task := claims(t, b, "bee")
	if task.ID != posted.ID || task.SenderSlug != "operator@relay-a" {
		t.Fatalf("claimed on B: id %s sender %q; want %s from operator@relay-a", task.ID, task.SenderSlug, posted.ID)
	}
	if _, err := b.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bee", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "done", Result: "42"}); err != nil {
		t.Fatal(err)
	}
	reaches(t, a, posted.ID, relay.StatusCompleted)
	got := collect(t, a, "operator", 2)
	if want := []string{relay.EventTaskClaimed, relay.EventTaskCompleted}; !slices.Equal(types(got), want) {
		t.Fatalf("A's operator read %v; want %v once each", types(got), want)
	}
	outboxesEmpty(t, a, b)
	if extra := readAll(t, a, "operator"); len(extra) != 0 {
		t.Fatalf("A's operator got extra updates: %+v", extra)
	}
	if mine := readAll(t, b, "operator"); len(mine) != 0 {
		t.Fatalf("B's own operator got A's operator's updates: %+v", mine)
	}
	// B's agent answers A's operator by the qualified name.
	back, err := b.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bee", RecipientSlug: "operator@relay-a", Title: "A question", Instructions: "?"})
	if err != nil {
		t.Fatalf("post to operator@relay-a on B: %v", err)
	}
	eventually(t, "the answer reaches A's operator", func() (bool, string) {
		m, err := a.svc.Task(ctx, back.ID)
		return err == nil && m.RecipientSlug == "operator", fmt.Sprintf("%+v %v", m.RecipientSlug, err)
	})
}

// Ensure a relay seen first is pending: its task waits on the receiving
// relay, listed as held, and is delivered, in order, once trusted; a
// blocked relay's task is kept, marked and never delivered.
func TestPendingRelayIsHeldUntilTrusted(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	b := startRelay(t, "relay-b", "", a.node.InviteURL())
	createAgent(t, b, "bee")
	ctx := t.Context()
	eventually(t, "A sees B pending", func() (bool, string) {
		rs := a.node.Relays()
		for _, r := range rs {
			if r.Name == "relay-b" {
				return r.State == relay.RelayPending && strings.HasPrefix(r.Fingerprint, "SHA256:"), fmt.Sprintf("%+v", r)
			}
		}
		return false, fmt.Sprint(rs)
	})
	if _, err := a.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "bee", Title: "x", Instructions: "x"}); err == nil {
		t.Fatal("A's operator could post to bee of a relay A has not trusted")
	}
	if _, err := a.node.SetTrust(ctx, "relay-b", relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	knows(t, a, "bee", "relay-b")
	var ids []string
	for i := range 3 {
		p, err := a.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "bee", Title: fmt.Sprintf("T%d", i), Instructions: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	eventually(t, "B holds A's three tasks", func() (bool, string) {
		h, err := b.node.Held(ctx)
		return err == nil && len(h) == 3 && h[0].Reason == HeldUntrusted && h[0].Sender == "operator@relay-a" && h[0].Title == "T0", fmt.Sprintf("%+v %v", h, err)
	})
	if task, err := b.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bee", Via: relay.ViaChat}); err != nil || task != nil {
		t.Fatalf("bee claimed %+v, %v before A was trusted", task, err)
	}
	if _, err := b.node.SetTrust(ctx, a.node.id.ID, relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		task, err := b.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bee", Via: relay.ViaChat})
		if err != nil || task == nil || task.ID != ids[i] {
			t.Fatalf("claim %d after trust = %+v, %v; want %s", i, task, err, ids[i])
		}
	}
	if h, err := b.node.Held(ctx); err != nil || len(h) != 0 {
		t.Fatalf("held after trust = %+v, %v", h, err)
	}

	// A third relay, blocked on B: its task is kept, marked, never delivered.
	c := startRelay(t, "relay-c", "", a.node.InviteURL())
	trustEachOther(t, c, b)
	knows(t, c, "bee", "relay-b")
	if _, err := b.node.SetTrust(ctx, "relay-c", relay.RelayBlocked, ""); err != nil {
		t.Fatal(err)
	}
	blocked := post(t, c, "operator", "bee", "Blocked")
	eventually(t, "B keeps C's task as blocked", func() (bool, string) {
		h, err := b.node.Held(ctx)
		return err == nil && len(h) == 1 && h[0].Reason == HeldBlocked && h[0].TaskID == blocked.ID, fmt.Sprintf("%+v %v", h, err)
	})
	if _, err := b.svc.Task(ctx, blocked.ID); err == nil {
		t.Fatal("a blocked relay's task was delivered")
	}
}

// Ensure a relay whose key changes goes back to pending with a warning,
// and trusting it again pins the new key.
func TestChangedKeyPutsRelayBackToPending(t *testing.T) {
	srv := startServer(t, t.TempDir(), 0)
	t.Cleanup(srv.Shutdown)
	a := startRelay(t, "relay-a", "", srv.ClientURL())
	b := startRelay(t, "relay-b", "", srv.ClientURL())
	trustEachOther(t, a, b)
	aID, aKey := a.node.id.ID, a.node.id.PublicKey
	a.stop() // its refresh would write its real key back
	ctx := t.Context()
	other := identity(t, t.TempDir(), "relay-a")
	entry := dirRelay{ID: aID, Name: "relay-a", PublicKey: other.PublicKey, At: time.Now().UnixMilli()}
	entry.Sig = other.sign(entry.signedBytes())
	raw, _ := json.Marshal(entry)
	kv := bucketClient(t, srv.ClientURL())
	if _, err := kv.Put(ctx, relayKey(aID), raw); err != nil {
		t.Fatal(err)
	}
	eventually(t, "B puts A back to pending", func() (bool, string) {
		for _, r := range b.node.Relays() {
			if r.ID == aID {
				return r.State == relay.RelayPending && r.NewFingerprint == Fingerprint(other.PublicKey), fmt.Sprintf("%+v", r)
			}
		}
		return false, "no relay-a"
	})
	st, err := b.node.Status(ctx)
	if err != nil || len(st.Warnings) == 0 || !strings.Contains(st.Warnings[0], "new key") {
		t.Fatalf("warnings = %v, %v", st.Warnings, err)
	}
	if _, err := b.node.SetTrust(ctx, "relay-a", relay.RelayTrusted, ""); err == nil ||
		!strings.Contains(err.Error(), Fingerprint(aKey)) || !strings.Contains(err.Error(), Fingerprint(other.PublicKey)) {
		t.Fatalf("trust without a fingerprint while two keys show = %v; want refused with both fingerprints", err)
	}
	info, err := b.node.SetTrust(ctx, "relay-a", relay.RelayTrusted, Fingerprint(other.PublicKey))
	if err != nil || info.State != relay.RelayTrusted || info.Fingerprint != Fingerprint(other.PublicKey) {
		t.Fatalf("trust again = %+v, %v; want the new key pinned", info, err)
	}
}

// Ensure a name two relays share is refused as ambiguous.
func TestTrustByAmbiguousNameIsRefused(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	startRelay(t, "twin", "", a.node.InviteURL())
	startRelay(t, "twin", "", a.node.InviteURL())
	eventually(t, "A sees both twins", func() (bool, string) {
		n := 0
		for _, r := range a.node.Relays() {
			if r.Name == "twin" {
				n++
			}
		}
		return n == 2, fmt.Sprint(n)
	})
	if _, err := a.node.SetTrust(t.Context(), "twin", relay.RelayTrusted, ""); err == nil || !strings.Contains(err.Error(), "give the id") {
		t.Fatalf("trust twin = %v; want ambiguous", err)
	}
}

// Ensure an envelope of a newer version is kept (held) rather than dropped.
func TestNewerVersionIsHeld(t *testing.T) {
	a, b := aliceAndBob(t)
	js := jetStreamClient(t, a.node.InviteURL())
	data := rawEnvelope(t, batchVersion+1, "future-1", a.node.id.ID, b.node.id.ID, time.Now(), relay.Task{}, nil, "")
	if _, err := js.Publish(t.Context(), subject(b.node.id.ID), data); err != nil {
		t.Fatal(err)
	}
	eventually(t, "held for its version", func() (bool, string) {
		h, err := b.node.Held(t.Context())
		return err == nil && len(h) == 1 && h[0].Reason == HeldVersion, fmt.Sprintf("%+v %v", h, err)
	})
}

// Ensure --mesh-trust account trusts every relay on the account as it is
// first seen: a task flows with no `mesh trust`.
func TestTrustAccountAdmitsAtOnce(t *testing.T) {
	account := func(o *Options) { o.TrustAccount = true }
	a := startRelayWith(t, "relay-a", "", store.Options{}, account)
	b := startRelayWith(t, "relay-b", "", store.Options{}, account, a.node.InviteURL())
	createAgent(t, b, "bee")
	knows(t, a, "bee", "relay-b")
	ctx := t.Context()
	posted := post(t, a, "operator", "bee", "x")
	eventually(t, "task on B", func() (bool, string) {
		got, err := b.svc.Task(ctx, posted.ID)
		return err == nil && got.SenderSlug == "operator@relay-a", fmt.Sprint(got.SenderSlug, err)
	})
	st, err := b.node.Status(ctx)
	if err != nil || st.Trust != "account" {
		t.Fatalf("trust mode = %q, %v", st.Trust, err)
	}
}

// Ensure a qualified name cannot be registered as a new agent, in a mesh
// or not: slug@relay always names another relay's agent.
func TestQualifiedSlugCannotBeRegistered(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	for _, svc := range []relay.Service{a.svc, a.db} {
		_, _, err := svc.CreateAgent(t.Context(), relay.CreateAgentInput{Slug: "operator@relay-b", DisplayName: "x", ModelSlug: "m", Capabilities: []string{"text-output"}})
		if relay.ErrorCode(err) != relay.EInvalidRequest {
			t.Fatalf("create operator@relay-b = %v; want invalid_request", err)
		}
		_, err = svc.RegisterAgent(t.Context(), relay.RegisterInput{Slug: "bee@relay-b", DisplayName: "x", ModelSlug: "m", Capabilities: []string{"text-output"}})
		if relay.ErrorCode(err) != relay.EInvalidRequest {
			t.Fatalf("register bee@relay-b = %v; want invalid_request", err)
		}
	}
}

// Ensure nothing is published to a relay this one does not trust: a task
// for an agent of a relay blocked here waits in the outbox, and goes once
// the relay is trusted again.
func TestOutboxWaitsForUntrustedRelay(t *testing.T) {
	a, b := trustedBee(t)
	ctx := t.Context()
	if _, err := a.node.SetTrust(ctx, "relay-b", relay.RelayBlocked, ""); err != nil {
		t.Fatal(err)
	}
	posted := post(t, a, "operator", "bee", "Waits")
	published := a.node.published.Load()
	if err := a.node.flush(); err != nil { // what the publisher does on each change, here at once
		t.Fatal(err)
	}
	if d, err := a.db.Mesh().OutboxDepth(ctx); err != nil || d != 1 || a.node.published.Load() != published {
		t.Fatalf("A's outbox = %d, %v, published %d; want the task waiting", d, err, a.node.published.Load()-published)
	}
	if _, err := a.node.SetTrust(ctx, "relay-b", relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	arrives(t, b, posted.ID)
	if got := a.node.published.Load(); got != published+1 {
		t.Fatalf("published %d while blocked and after; want 1 after", got-published)
	}
}

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
