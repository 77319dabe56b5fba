package store

import (
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// RetireAgent revokes slug's token and retires it (migration 0019): it
// leaves the agent lists (ListAgents) and gets no new tasks (PostTask), and
// it keeps its name, so nobody can enroll or be created under it and read
// the replies to its tasks, which stay. Retiring a retired agent changes
// nothing.
func (db *DB) RetireAgent(ctx context.Context, slug string) error {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return err
	}
	return db.write(ctx, "retire agent", func(t *tx) error {
		if err := t.mustBeAgent(slug, "only agents are retired."); err != nil {
			return err
		}
		if _, err := t.exec(`UPDATE agents SET token_hash = NULL, retired_at = COALESCE(retired_at, ?) WHERE slug = ?`, t.ts, slug); err != nil {
			return fmt.Errorf("retire agent: %w", err)
		}
		return t.agentChanged(slug)
	})
}

// ReinstateAgent brings the retired agent slug back with a new token and
// returns the token, once. An agent that is not retired is refused, so this
// never replaces a working agent's token.
func (db *DB) ReinstateAgent(ctx context.Context, slug string) (string, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return "", err
	}
	var token string
	err = db.write(ctx, "reinstate agent", func(t *tx) error {
		a, err := getAgent(t.ctx, t.tx, slug, t.now, &t.db.book)
		if err != nil {
			return err
		}
		if a.RetiredAt == "" {
			return relay.Errorf(relay.EInvalidRequest, "“%s” is not retired.", slug)
		}
		token = relay.NewAgentToken()
		if _, err := t.exec(`UPDATE agents SET token_hash = ?, retired_at = NULL WHERE slug = ?`, relay.HashToken(token), slug); err != nil {
			return fmt.Errorf("reinstate agent: %w", err)
		}
		return t.agentChanged(slug)
	})
	if err != nil {
		return "", err
	}
	return token, nil
}
