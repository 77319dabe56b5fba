package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ClaimSlug takes slug for this relay. A slug another trusted relay shows
// (its entry signed with its pinned key) is refused with agent_exists
// naming that relay; an entry of a relay not trusted blocks nothing. Each
// relay writes only its own key, so two relays claiming one new slug at
// once both write: the entry the bucket took first (the lower revision)
// keeps it, and the other relay takes its entry back and is refused. While
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
	local, err := n.hasLocal(ctx, slug)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if !local {
		owner, held, err := n.slugHolder(cctx, slug, 0)
		if err != nil {
			return n.claimOffline(ctx, slug, err)
		}
		if held {
			return n.taken(slug, owner.RelayID, owner.RelayName)
		}
	}
	key := agentKey(n.id.ID, slug)
	entry := dirAgent{Slug: slug, RelayID: n.id.ID, RelayName: n.id.Name, PublicKey: n.id.PublicKey, Online: true, At: time.Now().UnixMilli()}
	entry.Sig = n.id.sign(entry.signedBytes())
	b, _ := json.Marshal(entry)
	rev, err := kv.Put(cctx, key, b)
	if err != nil {
		return n.claimOffline(ctx, slug, err)
	}
	if local {
		return nil // this relay's agent already: registering again
	}
	owner, held, err := n.slugHolder(cctx, slug, rev)
	if err == nil && !held {
		return nil
	}
	// Another trusted relay wrote the slug first (or the check failed):
	// this relay's entry is taken back.
	_ = kv.Delete(cctx, key, jetstream.LastRevision(rev))
	if err != nil {
		return n.claimOffline(ctx, slug, err)
	}
	return n.taken(slug, owner.RelayID, owner.RelayName)
}

// hasLocal reports whether slug is an agent of this relay already.
func (n *Node) hasLocal(ctx context.Context, slug string) (bool, error) {
	agents, err := n.opts.Store.LocalAgents(ctx)
	if err != nil {
		return false, err
	}
	for _, a := range agents {
		if a.Slug == slug {
			return true, nil
		}
	}
	return false, nil
}

// slugHolder looks in the bucket for an entry of another, trusted relay
// showing slug (signed with its pinned key, fresh), written before revision
// before (any, for 0).
func (n *Node) slugHolder(ctx context.Context, slug string, before uint64) (dirAgent, bool, error) {
	entries, err := n.readDirectory(ctx, "agent.*."+strings.ReplaceAll(slug, ":", "="), 0)
	if err != nil {
		return dirAgent{}, false, fmt.Errorf("read the directory entries of %s: %w", slug, err)
	}
	for _, e := range entries {
		if e.op != jetstream.KeyValuePut || len(e.value) > maxDirEntry || before > 0 && e.rev >= before {
			continue
		}
		var a dirAgent
		if json.Unmarshal(e.value, &a) != nil || a.RelayID == n.id.ID || agentKey(a.RelayID, a.Slug) != e.key {
			continue
		}
		n.mu.Lock()
		fresh := n.entryFresh(a.At, e.created)
		n.mu.Unlock()
		if fresh && n.holds(a) {
			return a, true, nil
		}
	}
	return dirAgent{}, false, nil
}

// claimOffline lets a slug that is already a local agent pass while the
// directory is unreachable; a new slug must wait for it.
func (n *Node) claimOffline(ctx context.Context, slug string, cause error) error {
	if local, err := n.hasLocal(ctx, slug); err != nil {
		return err
	} else if local {
		return nil
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

// ReleaseSlug deletes this relay's directory entry for slug (a deleted or
// retired agent's), and its place in this relay's own view at once. When
// NATS cannot be reached the entry simply expires.
func (n *Node) ReleaseSlug(ctx context.Context, slug string) error {
	key := agentKey(n.id.ID, slug)
	n.mu.Lock()
	delete(n.agents, key)
	delete(n.good, key)
	n.mu.Unlock()
	kv := n.bucket()
	if kv == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := kv.Delete(cctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		n.setErr("release slug", err) // unreachable: the TTL removes it
	}
	return nil
}
