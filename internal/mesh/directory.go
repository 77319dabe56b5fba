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
	// At is when the owning relay wrote the entry (Unix ms), signed with
	// it: a replayed old entry is told from a fresh one (entryFresh).
	At int64 `json:"at"`
	// Sig is the owning relay's signature of the entry (dirSigned).
	Sig      string    `json:"sig,omitempty"`
	updated  time.Time // when the entry was last written
	revision uint64    // the bucket's revision of the entry
}

// dirRelay is a relay's directory entry.
type dirRelay struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	PublicKey string `json:"publicKey"`
	Address   string `json:"address,omitempty"`
	Outbox    int    `json:"outboxDepth"`
	At        int64  `json:"at"`            // when it was written (Unix ms), signed
	Sig       string `json:"sig,omitempty"` // signed with PublicKey
	// Reads is the newest envelope version the relay reads (absent: 2),
	// signed apart in ReadsSig, so the signature an older build checks
	// covers the fields it knows and nothing else.
	Reads    int       `json:"reads,omitempty"`
	ReadsSig string    `json:"readsSig,omitempty"`
	updated  time.Time // when the entry was last written
	// checked says valid holds relayEntryValid's answer, found when the
	// entry was cached: every envelope looks its relay up.
	checked, valid bool
	// lists says the entry is valid and signs that its relay reads
	// envelopes of batchVersion.
	lists bool
}

// Directory keys: agent.<relay id>.<slug> (':' in a slug, not allowed in a
// key, is written '='), relay.<id>. Each relay writes only keys of its own
// id, so NATS permissions can confine a relay to them: no relay can
// delete or overwrite another's entries.
func agentKey(relayID, slug string) string {
	return "agent." + relayID + "." + strings.ReplaceAll(slug, ":", "=")
}
func relayKey(id string) string { return "relay." + id }

// fresh reports whether an entry written at t is still within the bucket TTL.
func (n *Node) fresh(t time.Time) bool { return time.Since(t) < 3*n.opts.Refresh }

func (n *Node) bucket() jetstream.KeyValue {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kv
}

// loadDirectory reads the current entries, so signatures can be judged
// before the consumer starts, and where later reads go on from.
func (n *Node) loadDirectory(ctx context.Context) error {
	n.dirMu.Lock()
	defer n.dirMu.Unlock()
	began := time.Now()
	next, _, err := n.pollDirectory(ctx, 0)
	switch {
	case errors.Is(err, errTooMany):
		n.setErr("read directory", err) // what was read serves; the rest comes with the next polls
	case err != nil:
		return fmt.Errorf("read directory: %w", err)
	}
	n.dirNext = next
	n.dirRead.Store(began.UnixNano())
	return n.syncAgents(ctx)
}

// dirFresh is how old a read of the directory may be when messages stored
// after it are applied: a task's sender is named by the directory entry
// its relay wrote before sending it.
const dirFresh = 50 * time.Millisecond

// freshDirectory reads the directory again before msgs are applied when
// one of them was stored after the last read, and that read is older
// than dirFresh: a task from an agent made a moment ago then finds its
// entry, and its sender its plain name.
func (n *Node) freshDirectory(msgs []jetstream.Msg) {
	read := time.Unix(0, n.dirRead.Load())
	if time.Since(read) < dirFresh {
		return
	}
	for _, m := range msgs {
		if md, err := m.Metadata(); err == nil && md.Timestamp.After(read) {
			ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
			defer cancel()
			if err := n.refreshDirectory(ctx); err != nil && n.ctx.Err() == nil {
				n.log.Debug("mesh: read directory before applying", "err", err)
			}
			return
		}
	}
}

// refreshDirectory reads what was written to the directory since the last
// read, applies it and, when something was, works the remote agents out
// again.
func (n *Node) refreshDirectory(ctx context.Context) error {
	n.dirMu.Lock()
	defer n.dirMu.Unlock()
	began := time.Now()
	next, changed, err := n.pollDirectory(ctx, n.dirNext)
	n.dirNext = next
	if err == nil {
		n.dirRead.Store(began.UnixNano())
	}
	if changed {
		err = errors.Join(err, n.syncAgents(ctx))
	}
	return err
}

// entryFresh reports whether an entry its relay stamped at (Unix ms) was
// written to the bucket (created, the server's time) soon after: within
// the entries' TTL plus the clock skew allowed. An old signed entry written
// again by someone else is not. Called with n.mu held.
func (n *Node) entryFresh(at int64, created time.Time) bool {
	if at <= 0 {
		return false
	}
	age := created.Sub(time.UnixMilli(at))
	return age <= 3*n.opts.Refresh+maxSkew && age >= -maxSkew
}

// Bounds of the directory bucket: one entry, and all of them.
const (
	maxDirEntry = 32 << 10
	maxDirBytes = 64 << 20
)

// note applies one directory entry to the cache; an entry over maxDirEntry
// (a bucket made before the bound) is skipped.
func (n *Node) note(e jetstream.KeyValueEntry) {
	if len(e.Value()) > maxDirEntry {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	key := e.Key()
	del := e.Operation() != jetstream.KeyValuePut
	switch {
	case strings.HasPrefix(key, "agent."):
		if del {
			if a, ok := n.agents[key]; ok && a.RelayID != n.id.ID {
				delete(n.agents, key)
			}
			return
		}
		var a dirAgent
		if json.Unmarshal(e.Value(), &a) != nil || agentKey(a.RelayID, a.Slug) != key {
			return // not the entry its key names: ignored
		}
		if !n.entryFresh(a.At, e.Created()) {
			return // a replay of an old entry (or an unstamped one): ignored
		}
		a.updated, a.revision = e.Created(), e.Revision()
		n.agents[key] = a
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
		if !n.entryFresh(r.At, e.Created()) {
			return
		}
		r.updated = e.Created()
		r.valid, r.checked = relayEntryValid(r), true
		r.lists = r.valid && readsLists(r)
		n.relays[id] = r
	}
}

// watchDirectory keeps the cache and the store's placeholders current:
// it reads what was written to the directory since, every dirPoll.
func (n *Node) watchDirectory() {
	defer n.wg.Done()
	said := "" // the last read's failure, said once while it lasts
	tick.Every(n.ctx, dirPoll, func() {
		if !n.nc.IsConnected() {
			return // read again once back
		}
		ctx, cancel := context.WithTimeout(n.ctx, 4*opTimeout)
		defer cancel()
		switch err := n.refreshDirectory(ctx); {
		case err == nil:
			said = ""
		case n.ctx.Err() == nil && err.Error() != said:
			said = err.Error()
			n.setErr("read directory", err)
		}
	})
}

// refreshLoop writes this relay's entries again before they expire, reads
// the admission records again and recomputes the remote agents (which are
// online, which relays are trusted).
func (n *Node) refreshLoop() {
	defer n.wg.Done()
	tick.Every(n.ctx, n.opts.Refresh, func() {
		ctx, cancel := context.WithTimeout(n.ctx, 4*opTimeout)
		defer cancel()
		if err := n.advertise(ctx); err != nil && n.ctx.Err() == nil {
			n.setErr("refresh directory", err)
		}
		if err := n.loadTrust(ctx); err != nil && n.ctx.Err() == nil {
			n.setErr("read relay admissions", err)
		}
		if err := n.syncAgents(ctx); err != nil && n.ctx.Err() == nil {
			n.setErr("sync directory", err)
		}
		if _, err := n.opts.Store.PruneApplied(ctx, dedupMemory); err != nil && n.ctx.Err() == nil {
			n.setErr("prune applied messages", err)
		}
	})
}

// isLocal reports whether slug is no remote agent's name here.
func (n *Node) isLocal(slug string) bool {
	if relay.IsQualified(slug) {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, remote := n.names[slug]
	return !remote
}

// AgentRelay names the relay that owns slug, this relay's name for a local
// one; a relay this one does not trust (now) is named with its state.
func (n *Node) AgentRelay(slug string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := ""
	if m, ok := n.names[slug]; ok {
		id = m.RelayID
	} else if i := strings.IndexByte(slug, '@'); i > 0 && relay.IsQualified(slug) {
		if id = slug[i+1:]; !validRelayID(id) {
			return id // a remote sender named since the last sync: its relay's label
		}
	}
	if id == "" || id == n.id.ID {
		return n.id.Name
	}
	name := n.relayNameByID(id)
	if st := n.trust[id].State; st != relay.RelayTrusted {
		if st == "" {
			st = relay.RelayPending
		}
		name += " (" + st + ")"
	}
	return name
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

// fetchRelay reads relay id's directory entry now, rather than at the next
// poll, and returns it as cached.
func (n *Node) fetchRelay(ctx context.Context, id string) (dirRelay, bool) {
	es, err := n.readDirectory(ctx, relayKey(id), 0)
	if err != nil || len(es) != 1 {
		return dirRelay{}, false
	}
	n.note(es[0])
	return n.relay(id)
}

// Relays lists the relays of the directory and those seen on envelopes,
// this one first, each with its admission state, key fingerprint and, when
// its agents are named by its id here, why.
func (n *Node) Relays() []RelayInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	count := map[string]int{}
	for _, a := range n.good {
		count[a.RelayID]++
	}
	labels := n.labelsLocked()
	out := []RelayInfo{}
	seen := map[string]bool{}
	for _, r := range n.relays {
		if r.ID != n.id.ID && !relayEntryValid(r) {
			continue
		}
		info := RelayInfo{ID: r.ID, Name: r.Name, Address: r.Address, Online: n.fresh(r.updated), LastSeen: relay.FormatTime(r.updated),
			Agents: count[r.ID], Outbox: r.Outbox, Self: r.ID == n.id.ID, InDirectory: true}
		n.admission(&info, labels)
		seen[r.ID] = true
		out = append(out, info)
	}
	for id, t := range n.trust {
		if seen[id] || id == n.id.ID {
			continue
		}
		info := RelayInfo{ID: id, Name: t.Name, LastSeen: t.FirstSeen}
		if t.NewName != "" {
			info.Name = t.NewName
		}
		if info.Name == "" {
			info.Name = id
		}
		n.admission(&info, labels)
		out = append(out, info)
	}
	if !seen[n.id.ID] {
		info := RelayInfo{ID: n.id.ID, Name: n.id.Name, Address: n.opts.Address, Agents: count[n.id.ID], Self: true}
		n.admission(&info, labels)
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

// admission fills a relay's state, fingerprints, the name it was trusted
// under while a rename waits, and what keeps its name from naming its
// agents. Called with n.mu held.
func (n *Node) admission(info *RelayInfo, labels map[string]string) {
	if info.Self {
		info.State, info.Fingerprint = relay.RelayTrusted, Fingerprint(n.id.PublicKey)
		return
	}
	info.NameIssue = n.nameIssueLocked(info.ID, info.Name, labels)
	t, ok := n.trust[info.ID]
	if !ok {
		info.State = relay.RelayPending
		if r, ok := n.relays[info.ID]; ok {
			info.Fingerprint = Fingerprint(r.PublicKey)
		}
		return
	}
	info.State, info.Fingerprint, info.NewFingerprint = t.State, Fingerprint(t.PublicKey), Fingerprint(t.NewKey)
	if t.NewName != "" {
		info.PreviousName = t.Name
	}
}

// holds reports whether the entry holding a slug keeps it from this relay:
// signed by the relay it names with its pinned key, and that relay trusted.
// An entry of a relay not trusted (one a keyless client made up, say)
// neither keeps a local agent from registering again nor a new slug from
// being claimed.
func (n *Node) holds(owner dirAgent) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.ownerValid(owner) {
		return false
	}
	r, ok := n.trust[owner.RelayID]
	return ok && r.State == relay.RelayTrusted
}

// AgentInfo is one agent of the directory.
type AgentInfo struct {
	// Slug is the name agents here address it by: its slug, or slug@label
	// or slug@relay-id when another holder has the plain name.
	Slug string `json:"slug"`
	// RelaySlug is its slug on its relay.
	RelaySlug    string   `json:"relaySlug,omitempty"`
	DisplayName  string   `json:"displayName"`
	ModelSlug    string   `json:"modelSlug"`
	Capabilities []string `json:"capabilities"`
	Online       bool     `json:"online"`
	RelayID      string   `json:"relayId"`
	Relay        string   `json:"relay"`
	Local        bool     `json:"local"`
}

// Agents lists the directory's agents (this relay's and trusted relays'),
// each by the name agents here address it by.
func (n *Node) Agents() []AgentInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []AgentInfo{}
	for _, a := range n.good {
		name := n.nameOf(a.RelayID, a.Slug)
		if name == "" {
			continue // not named here yet: at the next sync
		}
		caps := a.Capabilities
		if caps == nil {
			caps = []string{}
		}
		out = append(out, AgentInfo{Slug: name, RelaySlug: a.Slug, DisplayName: a.DisplayName, ModelSlug: a.ModelSlug, Capabilities: caps,
			Online: a.Online && n.fresh(a.updated), RelayID: a.RelayID, Relay: n.relayName(a), Local: a.RelayID == n.id.ID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

var _ relay.Mesh = (*Node)(nil)
