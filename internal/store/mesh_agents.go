package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// RemoteRelayOf returns the id of the relay owning slug, "" when slug is local or unknown.
func (m *Mesh) RemoteRelayOf(ctx context.Context, slug string) (string, error) {
	return optionalString(ctx, m.db.r, "find agent relay", `SELECT relay_id FROM mesh_agents WHERE slug = ?`, slug)
}

// LocalAgents returns this relay's own software agents (no placeholders, no
// human operator, none retired), ordered by slug: what it advertises in the
// directory.
func (m *Mesh) LocalAgents(ctx context.Context) ([]relay.Agent, error) {
	return queryAll(ctx, m.db.r, "list local agents", agentScanner(m.db.now().UTC(), &m.db.book), `SELECT `+agentColumns+` FROM agents
		WHERE kind = 'agent' AND retired_at IS NULL AND slug NOT IN (SELECT slug FROM mesh_agents) ORDER BY slug`)
}

// SyncRemoteAgents gives the agents the directory shows (of trusted
// relays, in the order the mesh gives them: the first shown first) their
// names and profiles, and takes the directory's word on their presence
// (relay.Presence). An agent seen before keeps the name pinned to it and
// has its profile updated; one seen first gets its plain slug if no agent
// here has it, else a qualified name. A listed agent is online while the
// directory says so; a placeholder no longer listed stays (its tasks name
// it) and goes back to the window of its last-seen time. An agent whose
// profile or presence changed is published.
func (m *Mesh) SyncRemoteAgents(ctx context.Context, agents []relay.RemoteAgent) (relay.RemoteNames, error) {
	var out relay.RemoteNames
	err := m.db.write(ctx, "sync remote agents", func(t *tx) error {
		names := map[string]string{} // relay id/slug → name
		online := map[string]bool{}  // name → what the directory says
		changed := map[string]bool{}
		var listed []relay.RemoteAgent
		for _, a := range agents {
			slug, err := relay.NormalizeSlug("slug", a.Slug)
			if err != nil || a.RelayID == "" || relay.IsQualified(slug) {
				continue // a bad directory entry is skipped, not fatal
			}
			a.Slug = slug
			name, err := t.pinnedName(a.RelayID, slug)
			if err != nil {
				return err
			}
			if name == "" {
				candidates := append([]string{slug}, qualifiedNames(slug, a.RelayID, a.RelayLabel)...)
				if name, err = t.giveName(slug, a.RelayID, a.RelayName, candidates, a); err != nil {
					return err
				}
				if name == "" {
					continue // every name it may have is taken (an earlier version's rows)
				}
				changed[name] = true
			} else if changed[name], err = t.updateRemoteAgent(name, a); err != nil {
				return err
			}
			names[a.RelayID+"/"+slug] = name
			online[name] = a.Online
			listed = append(listed, a)
		}
		// The directory's word is taken inside the write, so the agents
		// published below say it. An agent coming online or leaving it is
		// seen now: its last-seen time is when its relay last said it was
		// there, which decides once the directory no longer lists it.
		for name, wasOrIsOnline := range t.db.book.setRemote(online) {
			changed[name] = true
			if !wasOrIsOnline {
				continue
			}
			if _, err := t.exec(`UPDATE agents SET last_seen_at = ? WHERE slug = ?`, t.ts, name); err != nil {
				return fmt.Errorf("see remote agent %s: %w", name, err)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(changed)) {
			if !changed[name] {
				continue
			}
			if err := t.agentChanged(name); err != nil && relay.ErrorCode(err) != relay.EUnknownAgent {
				return err
			}
		}
		var err error
		out, err = t.remoteNames(listed, names)
		return err
	})
	return out, err
}

// updateRemoteAgent brings placeholder name's profile to what the
// directory shows of its agent (its relay and slug stay; its presence is
// the directory's word, kept by SyncRemoteAgents) and says whether it
// changed.
func (t *tx) updateRemoteAgent(name string, a relay.RemoteAgent) (bool, error) {
	var (
		display, model, caps, relayName string
		details                         sql.NullString
	)
	err := t.tx.QueryRowContext(t.ctx, `SELECT a.display_name, a.model_slug, a.capabilities, a.details, m.relay_name
		FROM agents a JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = ?`, name).
		Scan(&display, &model, &caps, &details, &relayName)
	if err != nil {
		return false, fmt.Errorf("find agent %s: %w", name, err)
	}
	want := a.DisplayName
	if want == "" || name != a.Slug {
		want = name
	}
	capsJ := capsJSON(a.Capabilities)
	if display == want && model == a.ModelSlug && caps == capsJ && details.String == a.Details && relayName == a.RelayName {
		return false, nil
	}
	if _, err := t.exec(`UPDATE agents SET display_name = ?, model_slug = ?, capabilities = ?, details = ? WHERE slug = ?`,
		want, a.ModelSlug, capsJ, nullString(a.Details), name); err != nil {
		return false, fmt.Errorf("store remote agent %s: %w", name, err)
	}
	if _, err := t.exec(`UPDATE mesh_agents SET relay_name = ? WHERE slug = ?`, a.RelayName, name); err != nil {
		return false, fmt.Errorf("store remote agent %s: %w", name, err)
	}
	return true, nil
}

// PinRelayKey records key as relayID's public key the first time one is
// seen, and returns the pinned key ("" when none is known and key is "").
func (m *Mesh) PinRelayKey(ctx context.Context, relayID, key string) (string, error) {
	var pinned string
	err := m.db.write(ctx, "pin relay key", func(t *tx) error {
		if key != "" {
			if _, err := t.exec(`INSERT INTO mesh_relays (relay_id, public_key, first_seen) VALUES (?, ?, ?) ON CONFLICT (relay_id) DO NOTHING`,
				relayID, key, t.ts); err != nil {
				return fmt.Errorf("pin relay key: %w", err)
			}
		}
		err := t.tx.QueryRowContext(t.ctx, `SELECT public_key FROM mesh_relays WHERE relay_id = ?`, relayID).Scan(&pinned)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read relay key: %w", err)
		}
		return nil
	})
	return pinned, err
}
