package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func unauthorized() error {
	return relay.Errorf(relay.EUnauthorized, "Send Authorization: Bearer <admin token or per-agent token>.")
}

// Authenticate resolves an agent token (cca_), then an unexpired run token
// (ccr_), by its SHA-256 hash. Anything else is unauthorized.
func (db *DB) Authenticate(ctx context.Context, token string) (relay.Principal, error) {
	if token == "" {
		return relay.Principal{}, unauthorized()
	}
	hash := relay.HashToken(token)
	now := db.now()
	// One generation for the lookup and for keeping what is read: taken
	// before the read, so a change committed meanwhile makes it stale.
	gen := db.auth.gen.Load()
	if p, ok := db.auth.tokens.get(hash, gen, now); ok {
		return p, nil
	}
	// Two point lookups by index, too short to be worth cancelling: without
	// a context that can end, database/sql starts no goroutine to watch it.
	ctx = context.WithoutCancel(ctx)
	var slug string
	err := db.r.QueryRowContext(ctx, `SELECT slug FROM agents WHERE token_hash = ?`, hash).Scan(&slug)
	if testHookAuthRead != nil {
		testHookAuthRead()
	}
	if err == nil {
		p := relay.Principal{Kind: relay.PrincipalAgent, Slug: slug}
		db.auth.tokens.put(hash, p, gen, now.Add(authTTL))
		return p, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return relay.Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	var (
		taskID  sql.NullString
		expires string
	)
	err = db.r.QueryRowContext(ctx, `SELECT agent_slug, task_id, expires_at FROM run_tokens WHERE token_hash = ? AND expires_at > ?`,
		hash, relay.FormatTime(now)).Scan(&slug, &taskID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return relay.Principal{}, unauthorized()
	}
	if err != nil {
		return relay.Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	p := relay.Principal{Kind: relay.PrincipalAgent, Slug: slug, RunTaskID: taskID.String}
	// A run token is kept no longer than it is valid.
	if at, err := relay.ParseTime(expires); err == nil {
		until := now.Add(authTTL)
		if at.Before(until) {
			until = at
		}
		db.auth.tokens.put(hash, p, gen, until)
	}
	return p, nil
}

// IssueRunToken mints a run token for one worker run of taskID by slug,
// valid for ttlSeconds. Only its hash is stored.
func (db *DB) IssueRunToken(ctx context.Context, slug, taskID string, ttlSeconds int) (string, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return "", err
	}
	if taskID, err = relay.TaskID("taskId", taskID); err != nil {
		return "", err
	}
	if ttlSeconds <= 0 {
		return "", relay.Errorf(relay.EInvalidRequest, "ttlSeconds: must be positive.")
	}
	token := relay.NewRunToken()
	err = db.write(ctx, "issue run token", func(t *tx) error {
		if a, err := t.mustBeAgent(slug, "only agents run tasks."); err != nil || a.RetiredAt != "" {
			return cmp.Or(err, relay.RetiredNoWorker(slug))
		}
		if err := taskExists(t.ctx, t.tx, taskID); err != nil {
			return err
		}
		expires := relay.FormatTime(t.now.Add(time.Duration(ttlSeconds) * time.Second))
		if _, err := t.exec(`INSERT INTO run_tokens (token_hash, agent_slug, task_id, expires_at) VALUES (?, ?, ?, ?)`,
			relay.HashToken(token), slug, taskID, expires); err != nil {
			return fmt.Errorf("insert run token: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// RevokeRunTokens deletes every run token of taskID.
func (db *DB) RevokeRunTokens(ctx context.Context, taskID string) error {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return err
	}
	return db.writeOne(ctx, "revoke run tokens", `DELETE FROM run_tokens WHERE task_id = ?`, taskID)
}
