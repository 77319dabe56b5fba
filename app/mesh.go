package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// startMesh joins the mesh when cfg asks for it (--nats or --nats-embed, or
// their variables), else when the settings saved in the window name one;
// origin says which. Without any, it returns nil and the relay is the
// single-machine product. Saved settings that fail leave the relay out of
// the mesh (the Settings page shows why) rather than keep it from starting.
func startMesh(cfg config.Config, db *store.DB, log *slog.Logger) (*mesh.Node, meshOrigin, error) {
	if cfg.Mesh.Enabled() {
		node, err := joinMesh(cfg, db, log)
		return node, meshOrigin{source: MeshFromFlags}, err
	}
	cfg, saved, err := meshFromSettings(context.Background(), cfg, db.Mesh())
	origin := meshOrigin{source: MeshFromSettings, saved: saved}
	if err == nil && cfg.Mesh.Enabled() {
		var node *mesh.Node
		if node, err = joinMesh(cfg, db, log); err == nil {
			return node, origin, nil
		}
	}
	if err != nil {
		log.Warn("not joining the mesh of the saved settings", "err", err)
		return nil, meshOrigin{source: MeshFromNone, saved: saved, err: err.Error()}, nil
	}
	return nil, meshOrigin{source: MeshFromNone, saved: saved}, nil
}

func joinMesh(cfg config.Config, db *store.DB, log *slog.Logger) (*mesh.Node, error) {
	node, err := mesh.Start(mesh.Options{
		URLs:      cfg.Mesh.URLs,
		CredsFile: cfg.Mesh.Creds,
		NKeyFile:  cfg.Mesh.NKey,
		TLSCAFile: cfg.Mesh.TLSCA,
		Embed:     cfg.Mesh.Embed,
		DataDir:   cfg.DataDir,
		Name:      cfg.Mesh.Name,
		Address:   cfg.MCPURL(),
		Replicas:  cfg.Mesh.Replicas,
		// The NATS account is the boundary only when the operator says so.
		TrustAccount: cfg.Mesh.Trust == config.TrustAccount,
		EmbedOpen:    cfg.Mesh.EmbedOpen,
		Strict:       cfg.Mesh.Strict,
		Store:        db.Mesh(),
		Changes:      db.Subscribe,
		Logger:       log,
	})
	if err != nil {
		return nil, fmt.Errorf("join the mesh: %w", err)
	}
	return node, nil
}

// meshService is svc joined to node, or svc itself without a mesh.
func meshService(svc relay.Service, node *mesh.Node) relay.Service {
	if node == nil {
		return svc
	}
	return relay.WithMesh(svc, node)
}

// MeshStatus is the mesh as this relay sees it; Enabled is false without --nats.
type MeshStatus struct {
	Enabled bool `json:"enabled"`
	mesh.Status
}

// Mesh is the bound service of the Mesh page and the `mesh` CLI verb.
type Mesh struct {
	c *core

	mu       sync.Mutex
	node     *mesh.Node
	settings meshSettingsStore
	origin   meshOrigin
}

func (m *Mesh) setNode(n *mesh.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.node = n
}

func (m *Mesh) get() (*mesh.Node, context.Context, error) {
	_, ctx, err := m.c.get()
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node, ctx, nil
}

// Status returns the relays, the link to NATS, the outbox depth and the consumer lag.
func (m *Mesh) Status() (MeshStatus, error) {
	node, ctx, err := m.get()
	if err != nil || node == nil {
		return MeshStatus{Status: mesh.Status{Relays: []mesh.RelayInfo{}}}, err
	}
	st, err := node.Status(ctx)
	if err != nil {
		return MeshStatus{}, fmt.Errorf("mesh status: %w", err)
	}
	if st.Relays == nil {
		st.Relays = []mesh.RelayInfo{}
	}
	return MeshStatus{Enabled: true, Status: st}, nil
}

// Relays lists the relays of the mesh directory, this one included; empty
// outside a mesh. (Binding it also makes the generated TypeScript models
// define mesh.RelayInfo, which MeshStatus carries through its embedded Status.)
func (m *Mesh) Relays() ([]mesh.RelayInfo, error) {
	st, err := m.Status()
	if err != nil || st.Relays == nil {
		return []mesh.RelayInfo{}, err
	}
	return st.Relays, nil
}

// Agents lists every agent of the mesh directory with its relay.
func (m *Mesh) Agents() ([]mesh.AgentInfo, error) {
	node, _, err := m.get()
	if err != nil || node == nil {
		return []mesh.AgentInfo{}, err
	}
	return node.Agents(), nil
}

// errNoMesh answers the mesh actions outside a mesh.
var errNoMesh = relay.Errorf(relay.EInvalidRequest, "This relay is not in a mesh (start it with --nats URL or --nats-embed HOST:PORT).")

// Trust admits the relay named nameOrID (its name, or its id when two
// relays share the name): exactly the key whose fingerprint the operator
// approved is pinned (fingerprint as the page or `mesh relays` showed it;
// "" for the relay's only key, refused when it shows two), and what it sent
// while pending is delivered in order.
func (m *Mesh) Trust(nameOrID, fingerprint string) (mesh.RelayInfo, error) {
	return m.setTrust(nameOrID, relay.RelayTrusted, fingerprint)
}

// Block refuses the relay named nameOrID: what it sends is kept, marked
// and never delivered.
func (m *Mesh) Block(nameOrID string) (mesh.RelayInfo, error) {
	return m.setTrust(nameOrID, relay.RelayBlocked, "")
}

func (m *Mesh) setTrust(nameOrID, state, fingerprint string) (mesh.RelayInfo, error) {
	node, ctx, err := m.get()
	if err != nil {
		return mesh.RelayInfo{}, err
	}
	if node == nil {
		return mesh.RelayInfo{}, errNoMesh
	}
	return node.SetTrust(ctx, nameOrID, state, fingerprint)
}

// Invite returns the command another computer runs to join this mesh: with
// an embedded server, a new single-use invite (no password of the server).
func (m *Mesh) Invite() (mesh.Invite, error) {
	node, _, err := m.get()
	if err != nil {
		return mesh.Invite{}, err
	}
	if node == nil {
		return mesh.Invite{}, errNoMesh
	}
	return node.Invite()
}

// Held lists the envelopes this relay keeps without applying them: tasks of
// relays not trusted yet (delivered when trusted), of blocked relays (never
// delivered) and of newer versions (read after an upgrade). Empty outside a
// mesh. (Binding it also makes the generated models define mesh.HeldInfo.)
func (m *Mesh) Held() ([]mesh.HeldInfo, error) {
	node, ctx, err := m.get()
	if err != nil || node == nil {
		return []mesh.HeldInfo{}, err
	}
	return node.Held(ctx)
}

// Names lists the name every agent of another relay has here: its plain
// slug, or slug@label (slug@relay-id) when another holder has the plain
// name. Empty outside a mesh. (Binding it also makes the generated models
// define mesh.NameHolder.)
func (m *Mesh) Names() ([]mesh.NameHolder, error) {
	node, _, err := m.get()
	if err != nil || node == nil {
		return []mesh.NameHolder{}, err
	}
	return node.Names(), nil
}

// GiveName gives the plain name slug to the agent of that slug on the relay
// named relayNameOrID, as the operator chooses in a name contest: the agent
// that had it takes its qualified name, and every task, journal entry and
// worker's allowed senders keep naming the agents they named (the workers
// are reloaded). It returns the renames made, in order.
func (m *Mesh) GiveName(slug, relayNameOrID string) ([]relay.NameChange, error) {
	node, ctx, err := m.get()
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, errNoMesh
	}
	changes, err := node.GiveName(ctx, slug, relayNameOrID, m.c.reloadWorkersHook())
	if changes == nil {
		changes = []relay.NameChange{}
	}
	return changes, err
}

// Contests lists the slugs more than one holder shows: who has the plain
// name and what the others are called here. Empty outside a mesh.
// (Binding it also makes the generated models define mesh.NameContest,
// which MeshStatus carries.)
func (m *Mesh) Contests() ([]mesh.NameContest, error) {
	node, _, err := m.get()
	if err != nil || node == nil {
		return []mesh.NameContest{}, err
	}
	return node.Contests(), nil
}

// KeyChanges lists the relays whose directory entry shows another key than
// the one pinned. Empty outside a mesh. (Binding it also makes the
// generated models define mesh.KeyChange.)
func (m *Mesh) KeyChanges() ([]mesh.KeyChange, error) {
	node, _, err := m.get()
	if err != nil || node == nil {
		return []mesh.KeyChange{}, err
	}
	return node.KeyChanges(), nil
}
