package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ClaimSlug takes slug for this relay with a compare-and-set create. A slug
// another trusted relay holds (its entry signed with its pinned key) is
// refused with agent_exists naming that relay; an entry of a relay not
// trusted is taken over. While
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
	entry := dirAgent{Slug: slug, RelayID: n.id.ID, RelayName: n.id.Name, PublicKey: n.id.PublicKey, Online: true, At: time.Now().UnixMilli()}
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
		if err := json.Unmarshal(cur.Value(), &owner); err == nil && owner.RelayID != n.id.ID && n.holds(owner) {
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
