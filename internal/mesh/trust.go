package mesh

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// relayOf returns the admission record of relay id, recording what the
// directory shows of it (its name and self-signed key), and that key ("" if
// the directory shows none).
func (n *Node) relayOf(id string) (relay.MeshRelay, string, error) {
	d, ok := n.relay(id)
	if !ok {
		ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
		d, ok = n.fetchRelay(ctx, id)
		cancel()
	}
	name, key := "", ""
	if ok && relayEntryValid(d) {
		name, key = d.Name, d.PublicKey
	}
	if key == "" {
		// Known only from envelopes: pending, and not recorded until the
		// directory shows its key (made-up ids leave no rows behind).
		n.mu.Lock()
		cur, known := n.trust[id]
		n.mu.Unlock()
		if !known {
			return relay.MeshRelay{ID: id, State: relay.RelayPending}, "", nil
		}
		return cur, "", nil
	}
	r, err := n.see(n.ctx, id, name, key)
	return r, key, err
}

// see records a relay seen with name and key, through the cache.
func (n *Node) see(ctx context.Context, id, name, key string) (relay.MeshRelay, error) {
	n.mu.Lock()
	cur, ok := n.trust[id]
	gen := n.trustGen
	known := 0
	for _, r := range n.trust {
		if r.State != relay.RelayPending {
			known++
		}
	}
	n.mu.Unlock()
	if ok && (key == "" || key == cur.PublicKey && cur.NewKey == "" || key == cur.NewKey) &&
		(name == "" || name == cur.Name && cur.NewName == "" || name == cur.NewName) {
		return cur, nil
	}
	if !ok && known >= maxRelays {
		// The operator decided on maxRelays relays already: not recorded, pending.
		return relay.MeshRelay{ID: id, Name: name, State: relay.RelayPending}, nil
	}
	r, changed, err := n.opts.Store.SeeRelay(ctx, id, name, key, n.opts.TrustAccount)
	if err != nil {
		return r, err
	}
	if err := n.cacheTrust(ctx, gen, func(m map[string]relay.MeshRelay) { m[id] = r }); err != nil {
		return r, err
	}
	n.mu.Lock()
	if c, ok := n.trust[id]; ok {
		r = c // the store's newest, should another write have come between
	}
	renamed := ok && r.NewName != "" && r.NewName != cur.NewName
	if changed {
		w := fmt.Sprintf("relay %s (%s) shows a new key %s; its pinned key was %s", r.Name, id, Fingerprint(key), Fingerprint(cur.PublicKey))
		if r.State == relay.RelayPending {
			w += "; it is pending until you trust it again"
		}
		n.warn(w)
	}
	if renamed {
		n.warn(fmt.Sprintf("relay %s (%s) now calls itself %q; it is pending until you trust it again under that name", r.Name, id, r.NewName))
	}
	n.mu.Unlock()
	if changed {
		n.log.Warn("mesh: a relay's key changed", "relay", r.Name, "id", id, "fingerprint", Fingerprint(key), "state", r.State)
	} else if renamed {
		n.log.Warn("mesh: a trusted relay renamed itself", "relay", r.Name, "id", id, "name", r.NewName, "state", r.State)
	} else if !ok {
		n.log.Info("mesh: relay seen", "relay", r.Name, "id", id, "fingerprint", Fingerprint(r.PublicKey), "state", r.State)
	}
	return r, nil
}

// warn keeps a warning for Status (the latest maxRefusalLog). Called with
// n.mu held.
func (n *Node) warn(w string) {
	n.warnings = append(n.warnings, w)
	if len(n.warnings) > maxRefusalLog {
		n.warnings = n.warnings[len(n.warnings)-maxRefusalLog:]
	}
}

// untrusted lists the relays seen that this relay does not trust: nothing
// is published to them.
func (n *Node) untrusted() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for id, r := range n.trust {
		if r.State != relay.RelayTrusted {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// loadTrust fills the cache of admission records from the store (at setup,
// and at each refresh, so a cache that went astray is repaired).
func (n *Node) loadTrust(ctx context.Context) error {
	gen := n.trustGeneration()
	return n.cacheTrust(ctx, gen, nil)
}

// trustGeneration is n.trustGen, read before a store write of admissions
// (see cacheTrust).
func (n *Node) trustGeneration() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.trustGen
}

// cacheTrust applies a store write's outcome to the cache of admission
// records; gen is n.trustGen as read before that store write began (nil
// apply: the cache becomes the store's records). The store orders its
// writes but the cache writes after them may come in another order: the
// directory watch seeing a relay (pending) and the operator trusting it
// at once could leave the cache saying pending over the store's trusted,
// and as the cache is the relay's view that relay's agents were never
// listed. So if another write reached the cache since gen, this one's
// outcome may be the older: the records are read from the store again,
// and the last cache write always follows the last store write.
func (n *Node) cacheTrust(ctx context.Context, gen uint64, apply func(map[string]relay.MeshRelay)) error {
	for {
		if apply == nil {
			rs, err := n.opts.Store.MeshRelays(ctx)
			if err != nil {
				return fmt.Errorf("read relay admissions: %w", err)
			}
			apply = func(m map[string]relay.MeshRelay) {
				clear(m)
				for _, r := range rs {
					m[r.ID] = r
				}
			}
		}
		n.mu.Lock()
		if n.trustGen == gen {
			apply(n.trust)
			n.trustGen++
			n.mu.Unlock()
			return nil
		}
		gen = n.trustGen
		n.mu.Unlock()
		apply = nil
	}
}

// resolveRelay finds a relay by id or by name, names compared in their one
// form (relayName), the name it was trusted under or the one it shows now.
// Among the relays of a name, a trusted one is taken before one the
// operator decided on otherwise (blocked, or pending after a key change or
// a rename), and that before one never decided on: a relay a client made
// up never makes a trusted relay's name ambiguous. Two of the same rank
// are refused as ambiguous.
func (n *Node) resolveRelay(ctx context.Context, nameOrID string) (relay.MeshRelay, error) {
	q := strings.TrimSpace(nameOrID)
	if q == "" {
		return relay.MeshRelay{}, relay.Errorf(relay.EInvalidRequest, "Name a relay (its name or id).")
	}
	key := relayName(q).Key
	if q == n.id.ID || q == n.id.Name || key != "" && key == relayName(n.id.Name).Key {
		return relay.MeshRelay{}, relay.Errorf(relay.EInvalidRequest, "“%s” is this relay.", q)
	}
	// Record every relay the directory shows first, so a name is judged
	// against all of them.
	n.mu.Lock()
	var dir []dirRelay
	for _, r := range n.relays {
		if r.ID != n.id.ID && relayEntryValid(r) {
			dir = append(dir, r)
		}
	}
	n.mu.Unlock()
	for _, r := range dir {
		if _, err := n.see(ctx, r.ID, r.Name, r.PublicKey); err != nil {
			return relay.MeshRelay{}, err
		}
	}
	rs, err := n.opts.Store.MeshRelays(ctx)
	if err != nil {
		return relay.MeshRelay{}, err
	}
	named := func(name string) bool {
		if name == "" {
			return false
		}
		if key == "" {
			return name == q
		}
		return relayName(name).Key == key
	}
	best, byName := -1, []relay.MeshRelay(nil)
	for _, r := range rs {
		if r.ID == q {
			return r, nil
		}
		if !named(r.Name) && !named(r.NewName) {
			continue
		}
		rank := 0
		switch {
		case r.State == relay.RelayTrusted:
			rank = 2
		case r.State == relay.RelayBlocked || r.NewKey != "" || r.NewName != "":
			rank = 1
		}
		if rank > best {
			best, byName = rank, nil
		}
		if rank == best {
			byName = append(byName, r)
		}
	}
	switch len(byName) {
	case 0:
		return relay.MeshRelay{}, relay.Errorf(relay.EInvalidRequest, "No relay “%s” has been seen; `crosschat-relay mesh relays` lists them.", q)
	case 1:
		return byName[0], nil
	}
	ids := make([]string, len(byName))
	for i, r := range byName {
		ids[i] = r.ID
	}
	return relay.MeshRelay{}, relay.Errorf(relay.EInvalidRequest, "The name “%s” is shared by relays %s: give the id.", q, strings.Join(ids, ", "))
}

// SetTrust trusts or blocks the relay named nameOrID (its name, or its id
// when a name is shared). Trusting pins exactly the key whose fingerprint
// the operator approved (fingerprint; "" for the relay's only key, refused
// when it shows two) and applies, in order, what it sent while pending.
func (n *Node) SetTrust(ctx context.Context, nameOrID, state, fingerprint string) (RelayInfo, error) {
	r, err := n.resolveRelay(ctx, nameOrID)
	if err != nil {
		return RelayInfo{}, err
	}
	key := ""
	if state == relay.RelayTrusted {
		if key, err = approvedKey(r, fingerprint); err != nil {
			return RelayInfo{}, err
		}
	}
	// The consumer waits while the state changes and the held envelopes
	// are applied: nothing new of the relay is applied before them.
	n.applyMu.Lock()
	gen := n.trustGeneration()
	r, err = n.opts.Store.SetRelayState(ctx, r.ID, state, key)
	if err == nil {
		set := r
		err = n.cacheTrust(ctx, gen, func(m map[string]relay.MeshRelay) { m[set.ID] = set })
	}
	if err != nil {
		n.applyMu.Unlock()
		return RelayInfo{}, err
	}
	n.log.Info("mesh: relay "+state, "relay", r.Name, "id", r.ID, "fingerprint", Fingerprint(r.PublicKey))
	if state == relay.RelayTrusted {
		err = n.releaseHeldLocked(ctx, r.ID)
	}
	n.applyMu.Unlock()
	if err != nil {
		return RelayInfo{}, fmt.Errorf("deliver what relay %s sent while pending: %w", r.Name, err)
	}
	// The embedded server admits a trusted relay's key and cuts a blocked one.
	if err := n.readmit(ctx); err != nil {
		n.setErr("admissions", err)
	}
	if state == relay.RelayTrusted {
		n.poke() // what waited in the outbox for it goes now
	}
	if err := n.syncAgents(ctx); err != nil {
		n.setErr("sync directory", err)
	}
	for _, info := range n.Relays() {
		if info.ID == r.ID {
			return info, nil
		}
	}
	return RelayInfo{ID: r.ID, Name: r.Name, State: r.State, Fingerprint: Fingerprint(r.PublicKey)}, nil
}

// approvedKey is the key of r whose fingerprint is fingerprint: the key
// first seen (pinned) or the other key the directory now shows. Without a
// fingerprint, the relay's only key; a relay showing two keys is refused
// with both fingerprints, so the operator names the one confirmed.
func approvedKey(r relay.MeshRelay, fingerprint string) (string, error) {
	fp := strings.TrimSpace(fingerprint)
	if fp != "" && !strings.HasPrefix(fp, "SHA256:") {
		fp = "SHA256:" + fp
	}
	pinned, other := Fingerprint(r.PublicKey), Fingerprint(r.NewKey)
	shows := pinned
	if other != "" {
		shows = fmt.Sprintf("%s (first seen) and %s (shown since)", pinned, other)
	}
	switch {
	case r.PublicKey == "" && r.NewKey == "":
		return "", relay.Errorf(relay.EInvalidRequest, "Relay %s has shown no key yet, so it cannot be trusted; wait until it is in the mesh directory.", r.Name)
	case fp == "" && r.NewKey != "":
		return "", relay.Errorf(relay.EInvalidRequest, "Relay %s (%s) shows two keys, %s: trust it with --fingerprint naming the one its operator confirms.", r.Name, r.ID, shows)
	case fp == "":
		return r.PublicKey, nil
	case fp == pinned:
		return r.PublicKey, nil
	case other != "" && fp == other:
		return r.NewKey, nil
	}
	return "", relay.Errorf(relay.EInvalidRequest, "Relay %s (%s) does not show the key %s; it shows %s.", r.Name, r.ID, fp, shows)
}

// forgetGone drops the pending admission records of relays the directory
// no longer shows (never one the operator trusted or blocked, nor one
// whose key changed): relays a client made up and removed leave nothing.
func (n *Node) forgetGone(ctx context.Context) error {
	n.mu.Lock()
	var gone []string
	for id, r := range n.trust {
		if _, listed := n.relays[id]; !listed && r.State == relay.RelayPending && r.NewKey == "" {
			gone = append(gone, id)
		}
	}
	n.mu.Unlock()
	for _, id := range gone {
		gen := n.trustGeneration()
		forgot, err := n.opts.Store.ForgetPendingRelay(ctx, id)
		if err != nil {
			return err
		}
		if forgot {
			if err := n.cacheTrust(ctx, gen, func(m map[string]relay.MeshRelay) { delete(m, id) }); err != nil {
				return err
			}
		}
	}
	return nil
}
