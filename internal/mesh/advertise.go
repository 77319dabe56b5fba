package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// syncAgents records the relays of the directory (a new one is pending)
// and gives the store the agents of trusted relays whose entries carry
// their relay's signature. An entry for a slug an accepted entry holds,
// written by anyone else (another trusted relay included, while the
// holder's relay is alive), is ignored and reported as a conflict.
func (n *Node) syncAgents(ctx context.Context) error {
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	n.mu.Lock()
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
	for _, a := range n.agents {
		slug := a.Slug
		if n.agentAccepted(a) {
			if g, ok := n.good[slug]; ok && g.RelayID != a.RelayID && n.agentAccepted(g) && n.holderAlive(g) {
				// One trusted relay wrote over another's entry: the first
				// holder keeps the slug while its relay is alive.
				n.dirConflict[slug] = fmt.Sprintf("%s: relay %s wrote an entry over relay %s's, which keeps the slug",
					slug, n.relayName(a), n.relayName(g))
				continue
			}
			n.good[slug] = a
			delete(n.dirConflict, slug)
			continue
		}
		if g, ok := n.good[slug]; ok && n.agentAccepted(g) {
			n.dirConflict[slug] = fmt.Sprintf("%s: an entry naming relay %s was ignored (not trusted, or not signed by it); relay %s keeps the slug",
				slug, a.RelayID, n.relayName(g))
			continue
		}
		delete(n.good, slug)
	}
	for slug, g := range n.good {
		if _, listed := n.agents[agentKey(g.RelayID, slug)]; !listed || !n.agentAccepted(g) {
			delete(n.good, slug)
		}
	}
	var remote []relay.RemoteAgent
	for _, a := range n.good {
		if a.RelayID == n.id.ID {
			continue
		}
		remote = append(remote, relay.RemoteAgent{Slug: a.Slug, DisplayName: a.DisplayName, ModelSlug: a.ModelSlug,
			Capabilities: a.Capabilities, Details: a.Details, Online: a.Online && n.fresh(a.updated), RelayID: a.RelayID, RelayName: n.relayName(a)})
	}
	n.mu.Unlock()
	sort.Slice(remote, func(i, j int) bool { return remote[i].Slug < remote[j].Slug })
	conflicts, err := n.opts.Store.SyncRemoteAgents(ctx, remote)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.conflicts = conflicts
	n.mu.Unlock()
	return nil
}

// holderAlive reports whether the relay of entry g, which holds a slug,
// is this relay or still refreshes its directory entry. Called with n.mu held.
func (n *Node) holderAlive(g dirAgent) bool {
	if g.RelayID == n.id.ID {
		return true
	}
	r, ok := n.relays[g.RelayID]
	return ok && n.fresh(r.updated)
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

// advertise writes this relay's entry and one per local agent.
func (n *Node) advertise(ctx context.Context) error {
	kv := n.bucket()
	depth, err := n.opts.Store.OutboxDepth(ctx)
	if err != nil {
		return err
	}
	r := dirRelay{ID: n.id.ID, Name: n.id.Name, PublicKey: n.id.PublicKey, Address: n.opts.Address, Outbox: depth, At: time.Now().UnixMilli()}
	r.Sig = n.id.sign(r.signedBytes())
	b, _ := json.Marshal(r) // a struct of plain fields always marshals
	if _, err := kv.Put(ctx, relayKey(n.id.ID), b); err != nil {
		return fmt.Errorf("advertise relay: %w", err)
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
	if g, ok := n.good[a.Slug]; !ok || g.RelayID == n.id.ID || !n.agentAccepted(g) {
		n.good[a.Slug] = e
	}
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
