package mesh

import (
	"context"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Status is the mesh as this relay sees it.
type Status struct {
	RelayID   string `json:"relayId"`
	RelayName string `json:"relayName"`
	PublicKey string `json:"publicKey"`
	// Link is connected, connecting, reconnecting or closed.
	Link string `json:"link"`
	// Ready is false until the stream, directory and consumer are set up.
	Ready      bool   `json:"ready"`
	Server     string `json:"server,omitempty"`
	Embedded   string `json:"embedded,omitempty"`
	Outbox     int    `json:"outboxDepth"`
	Lag        uint64 `json:"consumerLag"`
	AckPending int    `json:"consumerAckPending"`
	Published  int64  `json:"published"`
	Applied    int64  `json:"applied"`
	Duplicates int64  `json:"duplicates"`
	Failures   int64  `json:"failures"`
	LastError  string `json:"lastError,omitempty"`
	// Conflicts are slugs of this relay's agents another relay also shows.
	Conflicts []string `json:"conflicts,omitempty"`
	// DirectoryConflicts say the name contests (one line per Names entry,
	// in its order, first) and then the directory entries ignored for a
	// slug an agent here has, one line each.
	DirectoryConflicts []string `json:"directoryConflicts,omitempty"`
	// Trust is approval (each relay waits for the operator) or account
	// (--mesh-trust account: the NATS account is the boundary).
	Trust string `json:"trust"`
	// EmbedAuth is "relay keys" (each relay admitted by invite or trust,
	// confined to its own subjects) or "open" for an embedded server, ""
	// without one.
	EmbedAuth string `json:"embedAuth,omitempty"`
	// Credential is what this relay's NATS credential was found to allow
	// beyond its own subjects; Strict is true with --nats-strict.
	Credential CredentialCheck `json:"credential"`
	Strict     bool            `json:"strict"`
	// StreamWarning says how the stream or directory differs from this
	// relay's settings when its credential may not change them.
	StreamWarning string `json:"streamWarning,omitempty"`
	// Held are envelopes kept but not applied (relays not trusted, newer versions).
	Held []HeldInfo `json:"held"`
	// Refused counts envelopes refused, by reason; Refusals are the latest, one a line.
	Refused  map[string]int64 `json:"refused"`
	Refusals []string         `json:"refusals,omitempty"`
	// Warnings are key changes seen.
	Warnings []string `json:"warnings,omitempty"`
	// Names are the slugs more than one holder shows: who has the plain
	// name (the operator's choice) and what the others are called here.
	Names []NameContest `json:"names"`
	// KeyChanges are the relays whose directory entry shows another key
	// than the one pinned: pending (what they send is held) until the
	// operator confirms one.
	KeyChanges []KeyChange `json:"keyChanges"`
	Relays     []RelayInfo `json:"relays"`
}

// RelayInfo is one relay of the directory.
type RelayInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Address  string `json:"address,omitempty"`
	Online   bool   `json:"online"`
	LastSeen string `json:"lastSeen"`
	Agents   int    `json:"agents"`
	Outbox   int    `json:"outboxDepth"`
	// Lag is the number of messages waiting for this relay in the stream
	// (its durable consumer's pending count); filled by Status.
	Lag  uint64 `json:"consumerLag"`
	Self bool   `json:"self"`
	// State is pending, trusted or blocked (trusted for this relay).
	State string `json:"state"`
	// Fingerprint is the pinned key's (Fingerprint); NewFingerprint a
	// different key the relay now shows, awaiting trust.
	Fingerprint    string `json:"fingerprint"`
	NewFingerprint string `json:"newFingerprint,omitempty"`
	// InDirectory is false for a relay known only from an envelope.
	InDirectory bool `json:"inDirectory"`
	// PreviousName is the name the relay had when it was trusted, while a
	// rename keeps it pending ("" otherwise).
	PreviousName string `json:"previousName,omitempty"`
	// NameIssue says why the relay's name is not used to name its agents
	// here (they are named slug@<relay id>): "" when it is.
	NameIssue string `json:"nameIssue,omitempty"`
}

// KeyChange is a relay that shows another key than the one pinned.
type KeyChange struct {
	RelayID string `json:"relayId"`
	Relay   string `json:"relay"`
	// Pinned is the pinned key's fingerprint, Shown the other key's.
	Pinned string `json:"pinned"`
	Shown  string `json:"shown"`
}

// KeyChanges lists the relays that show another key than the pinned one.
func (n *Node) KeyChanges() []KeyChange {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []KeyChange{}
	for id, r := range n.trust {
		if r.NewKey != "" {
			out = append(out, KeyChange{RelayID: id, Relay: n.relayNameByID(id), Pinned: Fingerprint(r.PublicKey), Shown: Fingerprint(r.NewKey)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RelayID < out[j].RelayID })
	return out
}

// NameContest is one slug that more than one holder shows.
type NameContest struct {
	Slug string `json:"slug"`
	// HolderID and Holder are the relay that has the plain name (this
	// relay's, for a local agent).
	HolderID string `json:"holderId"`
	Holder   string `json:"holder"`
	// Others are the other relays' agents of that slug, by the names they
	// have here.
	Others []NameHolder `json:"others"`
}

// NameHolder is one agent of another relay as this relay names it.
type NameHolder struct {
	Name    string `json:"name"`
	RelayID string `json:"relayId"`
	Relay   string `json:"relay"`
	// Slug is the agent's slug on its relay.
	Slug string `json:"slug,omitempty"`
}

// Link names the NATS connection state.
func (n *Node) Link() string {
	switch n.nc.Status() {
	case nats.CONNECTED:
		return "connected"
	case nats.RECONNECTING:
		return "reconnecting"
	case nats.CONNECTING:
		return "connecting"
	default:
		return "closed"
	}
}

// Status reports the link, the outbox, the consumer and the directory.
func (n *Node) Status(ctx context.Context) (Status, error) {
	s := Status{RelayID: n.id.ID, RelayName: n.id.Name, PublicKey: n.id.PublicKey, Link: n.Link(),
		Published: n.published.Load(), Applied: n.applied.Load(), Duplicates: n.duplicates.Load(), Failures: n.failures.Load()}
	if n.nc.IsConnected() {
		s.Server = n.nc.ConnectedUrlRedacted()
	}
	if n.srv != nil {
		s.Embedded = n.srv.ClientURL()
	}
	depth, err := n.opts.Store.OutboxDepth(ctx)
	if err != nil {
		return s, err
	}
	s.Outbox = depth
	select {
	case <-n.ready:
		s.Ready = true
		if n.nc.IsConnected() {
			cctx, cancel := context.WithTimeout(ctx, opTimeout)
			info, err := n.cons.Info(cctx)
			cancel()
			if err == nil {
				s.Lag, s.AckPending = info.NumPending, info.NumAckPending
			}
		}
	default:
	}
	conn := n.connectionError()
	n.mu.Lock()
	s.LastError = n.lastErr
	if conn != "" {
		s.LastError = conn // why nothing else works
	}
	s.Conflicts = append([]string(nil), n.conflicts...)
	s.Refusals = append([]string(nil), n.refusals...)
	s.Warnings = append([]string(nil), n.warnings...)
	s.Credential, s.Strict, s.StreamWarning = n.cred, n.opts.Strict, n.streamWarn
	n.mu.Unlock()
	s.Names = n.Contests()
	s.DirectoryConflicts = append(contestLines(s.Names), n.dirConflicts()...)
	s.KeyChanges = n.KeyChanges()
	s.Refused = n.Refused()
	s.Trust = "approval"
	if n.opts.TrustAccount {
		s.Trust = "account"
	}
	if n.srv != nil {
		s.EmbedAuth = "relay keys"
		if n.opts.EmbedOpen {
			s.EmbedAuth = "open"
		}
	}
	if s.Held, err = n.Held(ctx); err != nil {
		return s, err
	}
	s.Relays = n.Relays()
	n.relayLags(ctx, s.Relays)
	return s, nil
}

// relayLags fills each relay's consumer lag, as far as NATS answers (a
// relay that never joined has no consumer yet: 0).
func (n *Node) relayLags(ctx context.Context, relays []RelayInfo) {
	select {
	case <-n.ready:
	default:
		return
	}
	js := n.js
	if n.onOwnServer() {
		// The embedding relay reads every relay's consumer through its
		// privileged connection.
		if ajs, err := jetstream.New(n.admin); err == nil {
			js = ajs
		}
	} else if !n.nc.IsConnected() {
		return
	} else if c := n.Credential(); !c.Checked || len(c.Can) == 0 {
		// A relay's own credential reads only its own consumer; one that
		// may delete streams is taken to read them all.
		for i := range relays {
			if info := n.cons.CachedInfo(); relays[i].Self && info != nil {
				relays[i].Lag = info.NumPending
			}
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	for i := range relays {
		c, err := js.Consumer(cctx, StreamName, consumerName(relays[i].ID))
		if err != nil {
			continue
		}
		if info := c.CachedInfo(); info != nil {
			relays[i].Lag = info.NumPending
		}
	}
}
