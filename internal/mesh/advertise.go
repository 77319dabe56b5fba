package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// syncAgents records the relays of the directory (a new one is pending),
// forgets entries past their time to live, and gives the store the agents
// of trusted relays whose entries carry their relay's pinned signature:
// each keeps the name it was first given here, and a slug shown by more
// than one holder is a contest, shown and left to the operator. Entries
// not accepted (a relay not trusted, a bad signature) are ignored, and
// reported when they name a slug an agent here has.
func (n *Node) syncAgents(ctx context.Context) error {
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	return n.syncAgentsLocked(ctx)
}

// syncAgentsLocked is syncAgents with syncMu held.
func (n *Node) syncAgentsLocked(ctx context.Context) error {
	n.mu.Lock()
	n.forgetExpired()
	rels := make([]dirRelay, 0, len(n.relays))
	for _, r := range n.relays {
		if r.ID != n.id.ID && relayEntryValid(r) {
			rels = append(rels, r)
		}
	}
	n.mu.Unlock()
	if err := n.seeAll(ctx, rels); err != nil {
		return err
	}
	if err := n.forgetGone(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	good := map[string]dirAgent{}
	ignored := map[string][]string{} // slug → the relays its ignored entries name
	var shown []dirAgent
	for key, a := range n.agents {
		if !n.agentAccepted(a) {
			ignored[a.Slug] = append(ignored[a.Slug], a.RelayID)
			continue
		}
		good[key] = a
		if a.RelayID != n.id.ID {
			shown = append(shown, a)
		}
	}
	n.good = good
	// The entry the bucket took first is named first (a contest seen in
	// one sync goes to the earlier entry).
	sort.Slice(shown, func(i, j int) bool {
		if shown[i].revision != shown[j].revision {
			return shown[i].revision < shown[j].revision
		}
		return agentKey(shown[i].RelayID, shown[i].Slug) < agentKey(shown[j].RelayID, shown[j].Slug)
	})
	labels := n.labelsLocked()
	remote := make([]relay.RemoteAgent, 0, len(shown))
	for _, a := range shown {
		remote = append(remote, relay.RemoteAgent{Slug: a.Slug, DisplayName: a.DisplayName, ModelSlug: a.ModelSlug,
			Capabilities: a.Capabilities, Details: a.Details, Online: a.Online && n.fresh(a.updated), RelayID: a.RelayID,
			RelayName: n.relayName(a), RelayLabel: labels[a.RelayID]})
	}
	n.mu.Unlock()
	names, err := n.opts.Store.SyncRemoteAgents(ctx, remote)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setNames(names)
	n.dirConflict = map[string]string{}
	for slug, ids := range ignored {
		_, remoteName := n.names[slug]
		_, own := n.agents[agentKey(n.id.ID, slug)]
		if !remoteName && !own {
			continue // a slug no agent here has: nothing to confuse
		}
		sort.Strings(ids)
		n.dirConflict[slug] = fmt.Sprintf("%s: the entries naming relay %s were ignored (not trusted, or not signed by it)",
			slug, strings.Join(slices.Compact(ids), ", "))
	}
	return nil
}

// forgetExpired drops from the cache the entries of other relays past the
// bucket's time to live, as the bucket drops them (it tells no watcher):
// an agent entry so no longer counts, and a relay never decided on is
// forgotten (forgetGone). The entry of a relay the operator trusted or
// blocked stays, shown offline with when it was last seen. Called with
// n.mu held.
func (n *Node) forgetExpired() {
	for key, a := range n.agents {
		if a.RelayID != n.id.ID && !n.fresh(a.updated) {
			delete(n.agents, key)
		}
	}
	for id, r := range n.relays {
		if t, ok := n.trust[id]; id != n.id.ID && !n.fresh(r.updated) && (!ok || t.State == relay.RelayPending && t.NewKey == "" && t.NewName == "") {
			delete(n.relays, id)
		}
	}
}

// relayName is the name of an agent's relay: the admission record's, the
// directory's, else the entry's. Called with n.mu held.
func (n *Node) relayName(a dirAgent) string {
	if r, ok := n.trust[a.RelayID]; ok && r.Name != "" {
		return r.Name
	}
	if r, ok := n.relays[a.RelayID]; ok {
		return r.Name
	}
	return a.RelayName
}

// advertiseReads is the envelope version this relay's directory entry says
// it reads; a variable so tests can stand in for an older build (0: the
// field left out).
var advertiseReads = batchVersion

// advertise writes this relay's entry and one per local agent.
func (n *Node) advertise(ctx context.Context) error {
	if err := n.putRelay(ctx, advertiseReads); err != nil {
		return err
	}
	agents, err := n.opts.Store.LocalAgents(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range agents {
		if err := n.putAgent(ctx, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// putRelay writes this relay's own entry, saying it reads envelopes of
// version reads (0: leaving it out).
func (n *Node) putRelay(ctx context.Context, reads int) error {
	depth, err := n.opts.Store.OutboxDepth(ctx)
	if err != nil {
		return err
	}
	r := dirRelay{ID: n.id.ID, Name: n.id.Name, PublicKey: n.id.PublicKey, Address: n.opts.Address, Outbox: depth, At: time.Now().UnixMilli(),
		Reads: reads}
	r.Sig = n.id.sign(r.signedBytes())
	if r.Reads > 0 {
		r.ReadsSig = n.id.sign(r.readsSigned())
	}
	kv := n.bucket()
	if kv == nil {
		return errors.New("advertise relay: no directory")
	}
	b, _ := json.Marshal(r) // a struct of plain fields always marshals
	if _, err := kv.Put(ctx, relayKey(n.id.ID), b); err != nil {
		return fmt.Errorf("advertise relay: %w", err)
	}
	n.saidLists.Store(reads >= batchVersion)
	return nil
}

// withdrawLists rewrites this relay's entry without the envelope version
// it reads as the relay closes, so that other relays send it one change a
// message until whatever build starts next in this data folder says what
// it reads: an older build would hold a list until upgraded again.
func (n *Node) withdrawLists() {
	if !n.saidLists.Load() || !n.nc.IsConnected() {
		return // never said so (or cannot say otherwise now)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := n.putRelay(ctx, 0); err != nil {
		n.log.Debug("mesh: withdraw lists", "err", err)
	}
}

// advertiseAgent writes one local agent's entry after a change.
func (n *Node) advertiseAgent(a relay.Agent) {
	select {
	case <-n.ready:
	default:
		return // the setup advertises every agent
	}
	ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
	defer cancel()
	if rid, err := n.opts.Store.RemoteRelayOf(ctx, a.Slug); err != nil || rid != "" || a.Kind != relay.KindAgent {
		return
	}
	if a.RetiredAt != "" {
		// Retired: it takes no tasks, so it leaves the directory.
		_ = n.ReleaseSlug(ctx, a.Slug) // never fails: an entry it cannot delete expires
		return
	}
	if err := n.putAgent(ctx, a); err != nil && n.ctx.Err() == nil {
		n.setErr("advertise agent", err)
	}
}

// putAgent writes a local agent's entry under this relay's own key
// (agent.<relay id>.<slug>), which no other relay writes.
func (n *Node) putAgent(ctx context.Context, a relay.Agent) error {
	kv := n.bucket()
	e := dirAgent{Slug: a.Slug, RelayID: n.id.ID, RelayName: n.id.Name, DisplayName: a.DisplayName, ModelSlug: a.ModelSlug,
		Capabilities: a.Capabilities, Details: a.Details, Online: a.Availability == relay.Online, PublicKey: n.id.PublicKey, At: time.Now().UnixMilli()}
	e.Sig = n.id.sign(e.signedBytes())
	b, _ := json.Marshal(e) // a struct of plain fields always marshals
	key := agentKey(n.id.ID, a.Slug)
	rev, err := kv.Put(ctx, key, b)
	if err != nil {
		return fmt.Errorf("advertise agent %s: %w", a.Slug, err)
	}
	e.updated, e.revision = time.Now(), rev
	n.mu.Lock()
	n.agents[key] = e
	n.good[key] = e
	n.mu.Unlock()
	return nil
}

// seeAll records the relays of the directory. With --mesh-trust account
// they are trusted as first seen, and what they sent before is delivered at
// once, before the consumer applies anything newer of theirs (applyMu).
func (n *Node) seeAll(ctx context.Context, rels []dirRelay) error {
	if n.opts.TrustAccount {
		n.applyMu.Lock()
		defer n.applyMu.Unlock()
	}
	for _, r := range rels {
		if _, err := n.see(ctx, r.ID, r.Name, r.PublicKey); err != nil {
			return err
		}
	}
	if n.opts.TrustAccount {
		return n.releaseHeldLocked(ctx, "")
	}
	return nil
}
