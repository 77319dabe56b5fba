package store

import (
	"cmp"
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// RetireAgent revokes slug's token and retires it (migration 0019): it
// leaves the agent lists (ListAgents) and gets no new tasks (PostTask), and
// it keeps its name, so nobody can enroll or be created under it and read
// the replies to its tasks, which stay. Retiring a retired agent changes
// nothing. The tasks it was to do, or was doing, are blocked, and their
// senders told (blockTasksOfRetired); its worker is off, its run tokens gone.
func (db *DB) RetireAgent(ctx context.Context, slug string) error {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return err
	}
	return db.write(ctx, "retire agent", func(t *tx) error {
		if _, err := t.mustBeAgent(slug, "only agents are retired."); err != nil {
			return err
		}
		if _, err := t.exec(`UPDATE agents SET token_hash = NULL, retired_at = COALESCE(retired_at, ?) WHERE slug = ?`, t.ts, slug); err != nil {
			return fmt.Errorf("retire agent: %w", err)
		}
		if err := blockTasksOfRetired(t, slug, ""); err != nil {
			return err
		}
		// Nothing runs for it: no run of its acts on, and its worker is off.
		for _, q := range []string{`DELETE FROM run_tokens WHERE agent_slug = ?`, `UPDATE workers SET enabled = 0 WHERE agent_slug = ?`} {
			if _, err := t.exec(q, slug); err != nil {
				return fmt.Errorf("retire agent: %w", err)
			}
		}
		return t.agentChanged(slug)
	})
}

// blockTasksOfRetired blocks the tasks slug, now retired, was to do or was
// doing (only the task id, when id is not ""), and tells each sender: a
// retired agent claims nothing and its token is gone, so they would
// otherwise wait for ever. A sender may still requeue one (it waits for the
// agent to be reinstated) or cancel it.
func blockTasksOfRetired(t *tx, slug, id string) error {
	type open struct{ id, sender string }
	list, err := queryAll(t.ctx, t.tx, "find the retired agent's tasks", func(r rowScanner) (open, error) {
		var o open
		return o, r.Scan(&o.id, &o.sender)
	}, `SELECT id, sender_slug FROM tasks WHERE recipient_slug = ? AND status IN ('queued', 'claimed') AND (? = '' OR id = ?)`, slug, id, id)
	if err != nil {
		return err
	}
	msg := relay.RetiredBlocker(slug)
	for _, o := range list {
		if _, err := t.exec(`UPDATE tasks SET status = 'blocked', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, t.ts, o.id); err != nil {
			return fmt.Errorf("block the retired agent's task: %w", err)
		}
		if err := t.report(o.id, relay.ReportBlocked, msg, ""); err != nil {
			return err
		}
		if err := t.event(o.sender, relay.EventTaskBlocked, o.id, slug+": "+msg); err != nil {
			return err
		}
		if _, err := t.taskChanged(o.id); err != nil {
			return err
		}
	}
	return nil
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
		if a, err := getAgent(t.ctx, t.tx, slug, t.now, &t.db.book); err != nil || a.RetiredAt == "" {
			return cmp.Or(err, error(relay.Errorf(relay.EInvalidRequest, "“%s” is not retired.", slug)))
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
