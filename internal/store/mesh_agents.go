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
func (db *DB) RemoteRelayOf(ctx context.Context, slug string) (string, error) {
	return optionalString(ctx, db.r, "find agent relay", `SELECT relay_id FROM mesh_agents WHERE slug = ?`, slug)
}

// LocalAgents returns this relay's own software agents (no placeholders, no
// human operator), ordered by slug: what it advertises in the directory.
func (db *DB) LocalAgents(ctx context.Context) ([]relay.Agent, error) {
	return queryAll(ctx, db.r, "list local agents", agentScanner(db.now().UTC(), &db.book), `SELECT `+agentColumns+` FROM agents
		WHERE kind = 'agent' AND slug NOT IN (SELECT slug FROM mesh_agents) ORDER BY slug`)
}

// SyncRemoteAgents adds and updates the placeholders of remote agents,
// and takes the directory's word on their presence (relay.Presence): a
// listed agent is online while the directory says so, an agent no longer
// listed goes back to the window of its last-seen time (its placeholder
// stays: its tasks name it). An agent whose presence changed is published.
func (db *DB) SyncRemoteAgents(ctx context.Context, agents []relay.RemoteAgent) ([]string, error) {
	var conflicts []string
	err := db.write(ctx, "sync remote agents", func(t *tx) error {
		conflicts = conflicts[:0]
		online := map[string]bool{}
		changed := map[string]bool{}
		for _, a := range agents {
			slug, err := relay.NormalizeSlug("slug", a.Slug)
			if err != nil || a.RelayID == "" || relay.IsQualified(slug) {
				continue // a bad directory entry is skipped, not fatal
			}
			var (
				remote                      sql.NullString
				name, model, caps, lastSeen string
				details                     sql.NullString
				relayName                   sql.NullString
			)
			err = t.tx.QueryRowContext(t.ctx, `SELECT m.relay_id, m.relay_name, a.display_name, a.model_slug, a.capabilities, a.details, a.last_seen_at
				FROM agents a LEFT JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = ?`, slug).
				Scan(&remote, &relayName, &name, &model, &caps, &details, &lastSeen)
			exists := err == nil
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("find agent %s: %w", slug, err)
			}
			if exists && !remote.Valid {
				conflicts = append(conflicts, slug)
				continue
			}
			online[slug] = a.Online
			display := a.DisplayName
			if display == "" {
				display = slug
			}
			capsJ := capsJSON(a.Capabilities)
			if exists && remote.String == a.RelayID && relayName.String == a.RelayName && name == display && model == a.ModelSlug &&
				caps == capsJ && details.String == a.Details {
				continue
			}
			seen := lastSeen // the directory's word sets it below
			if !exists {
				seen = t.ts
			}
			if _, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence)
				VALUES (?, 'agent', ?, ?, ?, ?, ?, ?, 0)
				ON CONFLICT (slug) DO UPDATE SET display_name = excluded.display_name, model_slug = excluded.model_slug,
					capabilities = excluded.capabilities, details = excluded.details, last_seen_at = excluded.last_seen_at`,
				slug, display, a.ModelSlug, capsJ, nullString(a.Details), t.ts, seen); err != nil {
				return fmt.Errorf("store remote agent %s: %w", slug, err)
			}
			if _, err := t.exec(`INSERT INTO mesh_agents (slug, relay_id, relay_name) VALUES (?, ?, ?)
				ON CONFLICT (slug) DO UPDATE SET relay_id = excluded.relay_id, relay_name = excluded.relay_name`,
				slug, a.RelayID, a.RelayName); err != nil {
				return fmt.Errorf("store remote agent %s: %w", slug, err)
			}
			changed[slug] = true
		}
		// The directory's word is taken inside the write, so the agents
		// published below say it. An agent coming online or leaving it is
		// seen now: its last-seen time is when its relay last said it was
		// there, which decides once the directory no longer lists it.
		for slug, wasOrIsOnline := range t.db.book.setRemote(online) {
			changed[slug] = true
			if !wasOrIsOnline {
				continue
			}
			if _, err := t.exec(`UPDATE agents SET last_seen_at = ? WHERE slug = ?`, t.ts, slug); err != nil {
				return fmt.Errorf("see remote agent %s: %w", slug, err)
			}
		}
		for _, slug := range slices.Sorted(maps.Keys(changed)) {
			if err := t.agentChanged(slug); err != nil && relay.ErrorCode(err) != relay.EUnknownAgent {
				return err
			}
		}
		return nil
	})
	return conflicts, err
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
