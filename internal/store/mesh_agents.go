package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// RemoteRelayOf returns the id of the relay owning slug, "" when slug is local or unknown.
func (db *DB) RemoteRelayOf(ctx context.Context, slug string) (string, error) {
	return optionalString(ctx, db.r, "find agent relay", `SELECT relay_id FROM mesh_agents WHERE slug = ?`, slug)
}

// LocalAgents returns this relay's own software agents (no placeholders, no
// human operator), ordered by slug: what it advertises in the directory.
func (db *DB) LocalAgents(ctx context.Context) ([]relay.Agent, error) {
	return queryAll(ctx, db.r, "list local agents", agentScanner(db.now().UTC()), `SELECT `+agentColumns+` FROM agents
		WHERE kind = 'agent' AND slug NOT IN (SELECT slug FROM mesh_agents) ORDER BY slug`)
}

// SyncRemoteAgents gives the agents the directory shows (of trusted
// relays, in the order the mesh gives them: the first shown first) their
// names and profiles. An agent seen before keeps the name pinned to it and
// has its profile updated; one seen first gets its plain slug if no agent
// here has it, else a qualified name. Placeholders no longer listed stay
// (their tasks name them); they go offline as their last-seen time ages.
func (db *DB) SyncRemoteAgents(ctx context.Context, agents []relay.RemoteAgent) (relay.RemoteNames, error) {
	var out relay.RemoteNames
	err := db.write(ctx, "sync remote agents", func(t *tx) error {
		names := map[string]string{} // relay id/slug → name
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
			} else if err := t.updateRemoteAgent(name, a); err != nil {
				return err
			}
			names[a.RelayID+"/"+slug] = name
			listed = append(listed, a)
		}
		var err error
		out, err = t.remoteNames(listed, names)
		return err
	})
	return out, err
}

// updateRemoteAgent brings placeholder name's profile and presence to what
// the directory shows of its agent; its relay and slug stay.
func (t *tx) updateRemoteAgent(name string, a relay.RemoteAgent) error {
	var (
		display, model, caps, lastSeen, relayName string
		details                                   sql.NullString
	)
	err := t.tx.QueryRowContext(t.ctx, `SELECT a.display_name, a.model_slug, a.capabilities, a.details, a.last_seen_at, m.relay_name
		FROM agents a JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = ?`, name).
		Scan(&display, &model, &caps, &details, &lastSeen, &relayName)
	if err != nil {
		return fmt.Errorf("find agent %s: %w", name, err)
	}
	want := a.DisplayName
	if want == "" || name != a.Slug {
		want = name
	}
	capsJ := capsJSON(a.Capabilities)
	seen := lastSeen
	if a.Online {
		seen = t.ts
	}
	if display == want && model == a.ModelSlug && caps == capsJ && details.String == a.Details && relayName == a.RelayName &&
		availability(seen, t.now) == availability(lastSeen, t.now) {
		return nil
	}
	if _, err := t.exec(`UPDATE agents SET display_name = ?, model_slug = ?, capabilities = ?, details = ?, last_seen_at = ? WHERE slug = ?`,
		want, a.ModelSlug, capsJ, nullString(a.Details), seen, name); err != nil {
		return fmt.Errorf("store remote agent %s: %w", name, err)
	}
	if _, err := t.exec(`UPDATE mesh_agents SET relay_name = ? WHERE slug = ?`, a.RelayName, name); err != nil {
		return fmt.Errorf("store remote agent %s: %w", name, err)
	}
	return t.agentChanged(name)
}

// PinRelayKey records key as relayID's public key the first time one is
// seen, and returns the pinned key ("" when none is known and key is "").
func (db *DB) PinRelayKey(ctx context.Context, relayID, key string) (string, error) {
	var pinned string
	err := db.write(ctx, "pin relay key", func(t *tx) error {
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
