package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/tick"
)

// dirAgent is an agent's directory entry.
type dirAgent struct {
	Slug         string   `json:"slug"`
	RelayID      string   `json:"relayId"`
	RelayName    string   `json:"relayName"`
	DisplayName  string   `json:"displayName,omitempty"`
	ModelSlug    string   `json:"modelSlug,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	Details      string   `json:"details,omitempty"`
	Online       bool     `json:"online"`
	// PublicKey is the key of the owning relay.
	PublicKey string `json:"publicKey"`
	// Sig is the owning relay's signature of the entry (dirSigned).
	Sig     string    `json:"sig,omitempty"`
	updated time.Time // when the entry was last written
}

// dirRelay is a relay's directory entry.
type dirRelay struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	PublicKey string    `json:"publicKey"`
	Address   string    `json:"address,omitempty"`
	Outbox    int       `json:"outboxDepth"`
	Sig       string    `json:"sig,omitempty"` // signed with PublicKey
	updated   time.Time // when the entry was last written
}

// Directory keys: agent.<slug> (':' in a slug, not allowed in a key, is
// written '='), relay.<id>.
func agentKey(slug string) string { return "agent." + strings.ReplaceAll(slug, ":", "=") }
func relayKey(id string) string   { return "relay." + id }

// fresh reports whether an entry written at t is still within the bucket TTL.
func (n *Node) fresh(t time.Time) bool { return time.Since(t) < 3*n.opts.Refresh }

func (n *Node) bucket() jetstream.KeyValue {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kv
}

// loadDirectory starts the directory watch and reads the current entries,
// so signatures can be judged before the consumer starts.
func (n *Node) loadDirectory(ctx context.Context) error {
	w, err := n.kv.WatchAll(n.ctx)
	if err != nil {
		return fmt.Errorf("watch directory: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			_ = w.Stop()
			return fmt.Errorf("read directory: %w", ctx.Err())
		case e := <-w.Updates():
			if e == nil {
				n.mu.Lock()
				if n.watcher != nil { // an earlier, failed setup
					_ = n.watcher.Stop()
				}
				n.watcher = w
				n.mu.Unlock()
				return n.syncAgents(ctx)
			}
			n.note(e)
		}
	}
}

// note applies one directory entry to the cache.
func (n *Node) note(e jetstream.KeyValueEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := e.Key()
	del := e.Operation() != jetstream.KeyValuePut
	switch {
	case strings.HasPrefix(key, "agent."):
		if del {
			for s, a := range n.agents {
				if agentKey(s) == key && a.RelayID != n.id.ID {
					delete(n.agents, s)
				}
			}
			return
		}
		var a dirAgent
		if json.Unmarshal(e.Value(), &a) != nil || agentKey(a.Slug) != key {
			return
		}
		a.updated = e.Created()
		n.agents[a.Slug] = a
	case strings.HasPrefix(key, "relay."):
		id := strings.TrimPrefix(key, "relay.")
		if del {
			delete(n.relays, id)
			return
		}
		var r dirRelay
		if json.Unmarshal(e.Value(), &r) != nil || r.ID != id {
			return
		}
		r.updated = e.Created()
		n.relays[id] = r
	}
}

// watchDirectory keeps the cache and the store's placeholders current.
func (n *Node) watchDirectory() {
	defer n.wg.Done()
	n.mu.Lock()
	w := n.watcher
	n.mu.Unlock()
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-n.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				n.note(e)
			}
			if len(w.Updates()) == 0 {
				if err := n.syncAgents(n.ctx); err != nil && n.ctx.Err() == nil {
					n.setErr("sync directory", err)
				}
			}
		}
	}
}

// refreshLoop writes this relay's entries again before they expire and
// recomputes which remote agents are online.
func (n *Node) refreshLoop() {
	defer n.wg.Done()
	tick.Every(n.ctx, n.opts.Refresh, func() {
		ctx, cancel := context.WithTimeout(n.ctx, 4*opTimeout)
		defer cancel()
		if err := n.advertise(ctx); err != nil && n.ctx.Err() == nil {
			n.setErr("refresh directory", err)
		}
		if err := n.syncAgents(ctx); err != nil && n.ctx.Err() == nil {
			n.setErr("sync directory", err)
		}
		if _, err := n.opts.Store.PruneApplied(ctx, dedupMemory); err != nil && n.ctx.Err() == nil {
			n.setErr("prune applied messages", err)
		}
	})
}

// syncAgents records the relays of the directory (a new one is pending)
// and gives the store the agents of trusted relays whose entries carry
// their relay's signature. An entry for a slug an accepted entry holds,
// written by anyone else, is ignored and reported as a conflict.
func (n *Node) syncAgents(ctx context.Context) error {
	n.mu.Lock()
	rels := make([]dirRelay, 0, len(n.relays))
	for _, r := range n.relays {
		if r.ID != n.id.ID && relayEntryValid(r) {
			rels = append(rels, r)
		}
	}
	n.mu.Unlock()
	for _, r := range rels {
		if _, err := n.see(ctx, r.ID, r.Name, r.PublicKey); err != nil {
			return err
		}
	}
	if n.opts.TrustAccount {
		// Relays trusted as they were first seen: what they sent before
		// their directory entry appeared is delivered now.
		if err := n.releaseHeld(ctx, ""); err != nil {
			return err
		}
	}
	n.mu.Lock()
	for slug, a := range n.agents {
		if n.agentAccepted(a) {
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
		if _, listed := n.agents[slug]; !listed || !n.agentAccepted(g) {
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
	r := dirRelay{ID: n.id.ID, Name: n.id.Name, PublicKey: n.id.PublicKey, Address: n.opts.Address, Outbox: depth}
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

// putAgent writes a local agent's entry with compare-and-set: a slug
// another relay holds is left to it and reported as a conflict.
func (n *Node) putAgent(ctx context.Context, a relay.Agent) error {
	kv := n.bucket()
	e := dirAgent{Slug: a.Slug, RelayID: n.id.ID, RelayName: n.id.Name, DisplayName: a.DisplayName, ModelSlug: a.ModelSlug,
		Capabilities: a.Capabilities, Details: a.Details, Online: a.Availability == relay.Online, PublicKey: n.id.PublicKey}
	e.Sig = n.id.sign(e.signedBytes())
	b, _ := json.Marshal(e) // a struct of plain fields always marshals
	key := agentKey(a.Slug)
	for range 3 {
		cur, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err = kv.Create(ctx, key, b); errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
		} else if err == nil {
			var owner dirAgent
			if json.Unmarshal(cur.Value(), &owner) == nil && owner.RelayID != n.id.ID && n.holds(owner, true) {
				return fmt.Errorf("slug %s: held by relay %s (%s)", a.Slug, owner.RelayName, owner.RelayID)
			}
			if _, err = kv.Update(ctx, key, b, cur.Revision()); errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("advertise agent %s: %w", a.Slug, err)
		}
		e.updated = time.Now()
		n.mu.Lock()
		n.agents[a.Slug] = e
		n.good[a.Slug] = e
		n.mu.Unlock()
		return nil
	}
	return fmt.Errorf("advertise agent %s: the entry kept changing", a.Slug)
}

// ClaimSlug takes slug for this relay with a compare-and-set create. A slug
// another relay holds is refused with agent_exists naming that relay. While
// the directory cannot be reached, only slugs this relay already has pass.
func (n *Node) ClaimSlug(ctx context.Context, slug string) error {
	if rid, err := n.opts.Store.RemoteRelayOf(ctx, slug); err != nil {
		return err
	} else if rid != "" {
		return n.taken(slug, rid, "")
	}
	kv := n.bucket()
	if kv == nil {
		return n.claimOffline(ctx, slug, errors.New("the mesh is not set up yet"))
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	key := agentKey(slug)
	entry := dirAgent{Slug: slug, RelayID: n.id.ID, RelayName: n.id.Name, PublicKey: n.id.PublicKey, Online: true}
	entry.Sig = n.id.sign(entry.signedBytes())
	b, _ := json.Marshal(entry)
	for range 3 {
		cur, err := kv.Get(cctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			_, err = kv.Create(cctx, key, b)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // someone was faster: look at who
			}
			if err != nil {
				return n.claimOffline(ctx, slug, err)
			}
			return nil
		}
		if err != nil {
			return n.claimOffline(ctx, slug, err)
		}
		var owner dirAgent
		if err := json.Unmarshal(cur.Value(), &owner); err == nil && owner.RelayID != n.id.ID && n.holds(owner, false) {
			return n.taken(slug, owner.RelayID, owner.RelayName)
		}
		// Ours already, or a forged entry (not signed by the relay it names): take it.
		_, err = kv.Update(cctx, key, b, cur.Revision())
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return n.claimOffline(ctx, slug, err)
		}
		return nil
	}
	return fmt.Errorf("claim slug %s: the directory entry kept changing", slug)
}

// claimOffline lets a slug that is already a local agent pass while the
// directory is unreachable; a new slug must wait for it.
func (n *Node) claimOffline(ctx context.Context, slug string, cause error) error {
	agents, err := n.opts.Store.LocalAgents(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if a.Slug == slug {
			return nil
		}
	}
	return relay.Errorf(relay.EInternal, "The mesh directory cannot be reached (%v), so the new slug “%s” cannot be claimed yet; try again shortly.", cause, slug)
}

func (n *Node) taken(slug, relayID, relayName string) error {
	if relayName == "" {
		relayName = relayID
		if r, ok := n.relay(relayID); ok {
			relayName = r.Name
		}
	}
	return relay.Errorf(relay.EAgentExists, "The slug “%s” belongs to relay “%s” in the mesh; choose another slug.", slug, relayName).
		WithDetails(map[string]any{"slug": slug, "relay": relayName, "relayId": relayID})
}

// ReleaseSlug deletes this relay's directory entry for slug. When NATS
// cannot be reached the entry simply expires.
func (n *Node) ReleaseSlug(ctx context.Context, slug string) error {
	n.mu.Lock()
	delete(n.agents, slug)
	n.mu.Unlock()
	kv := n.bucket()
	if kv == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cur, err := kv.Get(cctx, agentKey(slug))
	if err != nil {
		return nil // gone already, or unreachable: the TTL removes it
	}
	var owner dirAgent
	if json.Unmarshal(cur.Value(), &owner) != nil || owner.RelayID != n.id.ID {
		return nil
	}
	if err := kv.Delete(cctx, agentKey(slug), jetstream.LastRevision(cur.Revision())); err != nil {
		n.setErr("release slug", err)
	}
	return nil
}

// isLocal reports whether the directory does not give slug to another relay.
func (n *Node) isLocal(slug string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.good[slug]
	return !ok || a.RelayID == n.id.ID
}

// AgentRelay names the relay that owns slug; this relay's name for a local one.
func (n *Node) AgentRelay(slug string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i := strings.IndexByte(slug, '@'); i > 0 && relay.IsQualified(slug) {
		return slug[i+1:] // a remote sender, slug@relay
	}
	a, ok := n.good[slug]
	if !ok || a.RelayID == n.id.ID {
		return n.id.Name
	}
	return n.relayName(a)
}

// TaskMark returns the signature mark of a remote task, "" for a local one.
func (n *Node) TaskMark(ctx context.Context, taskID string) (string, error) {
	return n.opts.Store.TaskMark(ctx, taskID)
}

func (n *Node) relay(id string) (dirRelay, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.relays[id]
	return r, ok
}

func (n *Node) fetchRelay(ctx context.Context, id string) (dirRelay, bool) {
	kv := n.bucket()
	if kv == nil {
		return dirRelay{}, false
	}
	e, err := kv.Get(ctx, relayKey(id))
	if err != nil {
		return dirRelay{}, false
	}
	n.note(e)
	return n.relay(id)
}

// Relays lists the relays of the directory and those seen on envelopes,
// this one first, each with its admission state and key fingerprint.
func (n *Node) Relays() []RelayInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	count := map[string]int{}
	for _, a := range n.good {
		count[a.RelayID]++
	}
	out := []RelayInfo{}
	seen := map[string]bool{}
	for _, r := range n.relays {
		if r.ID != n.id.ID && !relayEntryValid(r) {
			continue
		}
		info := RelayInfo{ID: r.ID, Name: r.Name, Address: r.Address, Online: n.fresh(r.updated), LastSeen: relay.FormatTime(r.updated),
			Agents: count[r.ID], Outbox: r.Outbox, Self: r.ID == n.id.ID, InDirectory: true}
		n.admission(&info)
		seen[r.ID] = true
		out = append(out, info)
	}
	for id, t := range n.trust {
		if seen[id] || id == n.id.ID {
			continue
		}
		info := RelayInfo{ID: id, Name: t.Name, LastSeen: t.FirstSeen}
		if info.Name == "" {
			info.Name = id
		}
		n.admission(&info)
		out = append(out, info)
	}
	if !seen[n.id.ID] {
		info := RelayInfo{ID: n.id.ID, Name: n.id.Name, Address: n.opts.Address, Agents: count[n.id.ID], Self: true}
		n.admission(&info)
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Self != out[j].Self {
			return out[i].Self
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// admission fills a relay's state and fingerprints. Called with n.mu held.
func (n *Node) admission(info *RelayInfo) {
	if info.Self {
		info.State, info.Fingerprint = relay.RelayTrusted, Fingerprint(n.id.PublicKey)
		return
	}
	t, ok := n.trust[info.ID]
	if !ok {
		info.State = relay.RelayPending
		if r, ok := n.relays[info.ID]; ok {
			info.Fingerprint = Fingerprint(r.PublicKey)
		}
		return
	}
	info.State, info.Fingerprint, info.NewFingerprint = t.State, Fingerprint(t.PublicKey), Fingerprint(t.NewKey)
}

// holds reports whether the entry holding a slug keeps it from this relay:
// signed by the relay it names and, for an agent this relay already has
// (local), from a relay this one trusts.
func (n *Node) holds(owner dirAgent, local bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.ownerValid(owner) {
		return false
	}
	if local {
		r, ok := n.trust[owner.RelayID]
		return ok && r.State == relay.RelayTrusted
	}
	return true
}

// AgentInfo is one agent of the directory.
type AgentInfo struct {
	Slug         string   `json:"slug"`
	DisplayName  string   `json:"displayName"`
	ModelSlug    string   `json:"modelSlug"`
	Capabilities []string `json:"capabilities"`
	Online       bool     `json:"online"`
	RelayID      string   `json:"relayId"`
	Relay        string   `json:"relay"`
	Local        bool     `json:"local"`
}

// Agents lists the directory's agents by slug.
func (n *Node) Agents() []AgentInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []AgentInfo{}
	for _, a := range n.good {
		name := n.relayName(a)
		caps := a.Capabilities
		if caps == nil {
			caps = []string{}
		}
		out = append(out, AgentInfo{Slug: a.Slug, DisplayName: a.DisplayName, ModelSlug: a.ModelSlug, Capabilities: caps,
			Online: a.Online && n.fresh(a.updated), RelayID: a.RelayID, Relay: name, Local: a.RelayID == n.id.ID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

var _ relay.Mesh = (*Node)(nil)
