package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

const agentColumns = `slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at,
	token_hash IS NOT NULL, display_name_locked, details_locked, invite_id IS NOT NULL, COALESCE(retired_at, '')`

// operatorDetails is the role sentence of the human operator.
const operatorDetails = "The person using the Crosschat dashboard: they post tasks, answer blockers and review results."

type rowScanner interface{ Scan(dest ...any) error }

// agentScanner scans agents with their presence as of now.
func agentScanner(now time.Time, book *presenceBook) func(rowScanner) (relay.Agent, error) {
	return func(row rowScanner) (relay.Agent, error) { return scanAgent(row, now, book) }
}

func scanAgent(row rowScanner, now time.Time, book *presenceBook) (relay.Agent, error) {
	var (
		a       relay.Agent
		kind    string
		caps    string
		details sql.NullString
	)
	if err := row.Scan(&a.Slug, &kind, &a.DisplayName, &a.ModelSlug, &caps, &details, &a.RegisteredAt, &a.LastSeenAt,
		&a.HasToken, &a.OwnerSet.DisplayName, &a.OwnerSet.Details, &a.Enrolled, &a.RetiredAt); err != nil {
		return a, err
	}
	a.Kind = relay.AgentKind(kind)
	a.Details = details.String
	if err := json.Unmarshal([]byte(caps), &a.Capabilities); err != nil {
		return a, fmt.Errorf("agent %s capabilities: %w", a.Slug, err)
	}
	if a.Capabilities == nil {
		a.Capabilities = []string{}
	}
	p := book.of(a.Slug)
	a.Availability = p.Availability(a.LastSeenAt, now)
	if a.Connected = p.Held(); a.Connected {
		a.LastSeenAt = relay.FormatTime(now) // seen now: it is connected
	}
	return a, nil
}

func getAgent(ctx context.Context, q queryer, slug string, now time.Time, book *presenceBook) (relay.Agent, error) {
	a, err := scanAgent(q.QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents WHERE slug = ?`, slug), now, book)
	if errors.Is(err, sql.ErrNoRows) {
		return a, unknownAgent(slug)
	}
	if err != nil {
		return a, fmt.Errorf("get agent: %w", err)
	}
	return a, nil
}

// mustBeAgent is the agent slug names, refusing no one (unknown_agent) or
// a person (invalid_agent_kind, with the kind); why ends the refusal
// "“slug” is a person; …".
func (t *tx) mustBeAgent(slug, why string) (relay.Agent, error) {
	a, err := getAgent(t.ctx, t.tx, slug, t.now, &t.db.book)
	if err != nil {
		return a, err
	}
	if a.Kind != relay.KindAgent {
		return a, relay.Errorf(relay.EInvalidAgentKind, "“%s” is a person; %s", slug, why).
			WithDetails(map[string]any{"kind": string(a.Kind)})
	}
	return a, nil
}

func capsJSON(caps []string) string {
	if len(caps) == 0 {
		return "[]" // taskScan.task reads this one without decoding it
	}
	b, _ := json.Marshal(caps) // a []string always marshals
	return string(b)
}

// ensureOperator creates the human operator if missing.
func (db *DB) ensureOperator(ctx context.Context) error {
	return db.write(ctx, "ensure operator", func(t *tx) error {
		seq, err := maxSequence(t.ctx, t.tx)
		if err != nil {
			return err
		}
		_, err = t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence)
			VALUES (?, 'human', 'Operator', 'human', ?, ?, ?, ?, ?) ON CONFLICT (slug) DO NOTHING`,
			db.operator, capsJSON([]string{"text-input", "text-output"}), operatorDetails, t.ts, t.ts, seq)
		if err != nil {
			return fmt.Errorf("insert operator: %w", err)
		}
		return nil
	})
}

// RegisterAgent creates or updates an agent. Owner-locked name and role are
// kept; a nil Details keeps the current role. It refreshes presence.
func (db *DB) RegisterAgent(ctx context.Context, in relay.RegisterInput) (relay.Agent, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Agent{}, err
	}
	var out relay.Agent
	err = db.write(ctx, "register agent", func(t *tx) error {
		var details any
		keepDetails := in.Details == nil
		if !keepDetails {
			details = nullString(*in.Details)
		}
		n, err := t.execCount("update agent", `UPDATE agents SET
				display_name = CASE WHEN display_name_locked THEN display_name ELSE ? END,
				model_slug = ?,
				capabilities = ?,
				details = CASE WHEN details_locked OR ? THEN details ELSE ? END,
				last_seen_at = ?
			WHERE slug = ?`,
			in.DisplayName, in.ModelSlug, capsJSON(in.Capabilities), keepDetails, details, t.ts, in.Slug)
		if err != nil {
			return err
		}
		if n == 0 {
			seq, err := maxSequence(t.ctx, t.tx)
			if err != nil {
				return err
			}
			if _, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence)
				VALUES (?, 'agent', ?, ?, ?, ?, ?, ?, ?)`,
				in.Slug, in.DisplayName, in.ModelSlug, capsJSON(in.Capabilities), details, t.ts, t.ts, seq); err != nil {
				return fmt.Errorf("insert agent: %w", err)
			}
		}
		if err := t.agentChanged(in.Slug); err != nil {
			return err
		}
		out = *t.changes[len(t.changes)-1].Agent
		return nil
	})
	return out, err
}

// Heartbeat refreshes the agent's presence.
func (db *DB) Heartbeat(ctx context.Context, slug string) (relay.Agent, error) {
	slug, err := relay.NormalizeSlug("agentSlug", slug)
	if err != nil {
		return relay.Agent{}, err
	}
	var out relay.Agent
	err = db.write(ctx, "heartbeat", func(t *tx) error {
		if err := t.touch(slug); err != nil {
			return err
		}
		out, err = getAgent(t.ctx, t.tx, slug, t.now, &t.db.book)
		return err
	})
	return out, err
}

// GetAgent returns one agent without touching presence.
func (db *DB) GetAgent(ctx context.Context, slug string) (relay.Agent, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return relay.Agent{}, err
	}
	return getAgent(ctx, db.r, slug, db.now(), &db.book)
}

// ListAgents returns agents ordered by slug, only online ones unless
// includeOffline.
func (db *DB) ListAgents(ctx context.Context, includeOffline bool) ([]relay.Agent, error) {
	now := db.now()
	// A retired agent is in no list (RetireAgent).
	query := `SELECT ` + agentColumns + ` FROM agents WHERE retired_at IS NULL`
	var args []any
	if !includeOffline {
		// Those seen within the window or held online by a connection;
		// the rules of relay.Presence then pick.
		query += ` AND (last_seen_at >= ? OR slug IN (SELECT value FROM json_each(?)))`
		args = append(args, relay.FormatTime(now.Add(-relay.OnlineWindow)), db.book.held())
	}
	agents, err := queryAll(ctx, db.r, "list agents", agentScanner(now, &db.book), query+` ORDER BY slug`, args...)
	if err != nil || includeOffline {
		return agents, err
	}
	return slices.DeleteFunc(agents, func(a relay.Agent) bool { return a.Availability != relay.Online }), nil
}

// CreateAgent creates an agent (not locked, not marked seen by itself,
// offline until its first call) and, for kind agent, returns its token once.
func (db *DB) CreateAgent(ctx context.Context, in relay.CreateAgentInput) (relay.Agent, string, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Agent{}, "", err
	}
	var (
		out   relay.Agent
		token string
	)
	err = db.write(ctx, "create agent", func(t *tx) error {
		if err := t.mustExist(in.Slug); err == nil {
			return relay.Errorf(relay.EAgentExists, "An agent “%s” already exists.", in.Slug).WithDetails(map[string]any{"slug": in.Slug})
		} else if relay.ErrorCode(err) != relay.EUnknownAgent {
			return err
		}
		seq, err := maxSequence(t.ctx, t.tx)
		if err != nil {
			return err
		}
		var hash any
		if in.Kind == relay.KindAgent {
			token = relay.NewAgentToken()
			hash = relay.HashToken(token)
		}
		if _, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence, token_hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.Slug, string(in.Kind), in.DisplayName, in.ModelSlug, capsJSON(in.Capabilities), nullString(in.Details), t.ts, t.ts, seq, hash); err != nil {
			return fmt.Errorf("insert agent: %w", err)
		}
		// Not heard from yet: offline, as after a stream's close, until its
		// first call, which is published however soon (not throttled).
		t.db.book.left(in.Slug, t.ts)
		if err := t.agentChanged(in.Slug); err != nil {
			return err
		}
		t.agents = t.agents[:len(t.agents)-1]
		out = *t.changes[len(t.changes)-1].Agent
		return nil
	})
	if err != nil {
		return relay.Agent{}, "", err
	}
	return out, token, nil
}

// UpdateProfile sets and locks the display name and/or role. An empty
// Details clears the role and unlocks it.
func (db *DB) UpdateProfile(ctx context.Context, slug string, in relay.ProfileUpdate) (relay.Agent, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return relay.Agent{}, err
	}
	if in, err = in.Validate(); err != nil {
		return relay.Agent{}, err
	}
	var out relay.Agent
	err = db.write(ctx, "update agent profile", func(t *tx) error {
		if err := t.mustExist(slug); err != nil {
			return err
		}
		if in.DisplayName != nil {
			if _, err := t.exec(`UPDATE agents SET display_name = ?, display_name_locked = 1 WHERE slug = ?`, *in.DisplayName, slug); err != nil {
				return fmt.Errorf("update display name: %w", err)
			}
		}
		if in.Details != nil {
			locked := *in.Details != ""
			if _, err := t.exec(`UPDATE agents SET details = ?, details_locked = ? WHERE slug = ?`, nullString(*in.Details), locked, slug); err != nil {
				return fmt.Errorf("update details: %w", err)
			}
		}
		if err := t.agentChanged(slug); err != nil {
			return err
		}
		out = *t.changes[len(t.changes)-1].Agent
		return nil
	})
	return out, err
}

// IssueToken replaces the agent's token and returns the new one, once.
func (db *DB) IssueToken(ctx context.Context, slug string) (string, error) {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return "", err
	}
	var token string
	err = db.write(ctx, "issue token", func(t *tx) error {
		a, err := t.mustBeAgent(slug, "people use the dashboard and never get agent tokens.")
		if err != nil || a.RetiredAt != "" {
			return cmp.Or(err, relay.RetiredNoToken(slug))
		}
		token = relay.NewAgentToken()
		if _, err := t.exec(`UPDATE agents SET token_hash = ? WHERE slug = ?`, relay.HashToken(token), slug); err != nil {
			return fmt.Errorf("store token hash: %w", err)
		}
		return t.agentChanged(slug)
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// RevokeToken removes the agent's token.
func (db *DB) RevokeToken(ctx context.Context, slug string) error {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return err
	}
	return db.write(ctx, "revoke token", func(t *tx) error {
		if err := t.mustExist(slug); err != nil {
			return err
		}
		if _, err := t.exec(`UPDATE agents SET token_hash = NULL WHERE slug = ?`, slug); err != nil {
			return fmt.Errorf("clear token hash: %w", err)
		}
		return t.agentChanged(slug)
	})
}

// DeleteAgent removes an agent that has no open task, with its run tokens,
// its worker and its push stream's rows, and takes it off every worker's
// allowed senders in the same transaction. Finished tasks and journal
// events stay, and while a task names it the name stays taken for an
// invitee and another relay's agent (notADeletedAgents), so neither reads
// them; the operator may create or register an agent under it again (a
// project's folder registered again, say), which takes them back.
func (db *DB) DeleteAgent(ctx context.Context, slug string) error {
	slug, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return err
	}
	err = db.write(ctx, "delete agent", func(t *tx) error {
		if err := t.mustExist(slug); err != nil {
			return err
		}
		if slug == db.operator {
			return relay.Errorf(relay.EOperatorProtected, "The operator “%s” cannot be deleted.", slug)
		}
		var open int
		if err := t.tx.QueryRowContext(t.ctx, `SELECT COUNT(*) FROM tasks
			WHERE status IN ('queued', 'claimed', 'blocked') AND (sender_slug = ? OR recipient_slug = ?)`, slug, slug).Scan(&open); err != nil {
			return fmt.Errorf("count open tasks: %w", err)
		}
		if open > 0 {
			return relay.HasOpenTasks(slug, open)
		}
		// The agent's own worker goes with it (ON DELETE CASCADE); no
		// worker may keep taking tasks from its slug, which someone could
		// enroll under next.
		if err := dropSender(t, slug); err != nil {
			return err
		}
		if _, err := t.exec(`DELETE FROM agents WHERE slug = ?`, slug); err != nil {
			return fmt.Errorf("delete agent row: %w", err)
		}
		if _, err := t.exec(`DELETE FROM push_events WHERE agent_slug = ?`, slug); err != nil {
			return fmt.Errorf("delete push stream: %w", err)
		}
		// Forgetting the walk is always safe (the next reader of the slug
		// walks from its cursor), so it need not wait for the commit.
		delete(t.db.walked, slug)
		t.publish(relay.Change{Type: relay.ChangeAgentRemoved, Slug: slug})
		return nil
	})
	if err == nil {
		db.presenceMu.Lock()
		delete(db.presence, slug)
		db.presenceMu.Unlock()
		db.book.forget(slug)
	}
	return err
}

// notADeletedAgents refuses a new agent under slug while a task names it:
// the tasks of a deleted agent of that name, kept until the retention
// sweep takes them, whose results, instructions and sender's rights the
// new agent would otherwise get. Enrolling and another relay's names are
// held to it; the operator's own creations are not.
func (t *tx) notADeletedAgents(slug string) error {
	taken, err := exists(t.ctx, t.tx, "tasks of "+slug, `SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks WHERE sender_slug = ?)
		OR EXISTS (SELECT 1 FROM tasks WHERE recipient_slug = ?)`, slug, slug)
	if err != nil || !taken {
		return err
	}
	return relay.Errorf(relay.EAgentExists, "The name “%s” belonged to an agent that was deleted, and its tasks are kept (%g days after they finish); choose another name, so that nobody reads them under it.", slug, t.db.retention.Hours()/24).
		WithDetails(map[string]any{"slug": slug, "deleted": true})
}

// mustExist fails with unknown_agent unless slug is an agent.
func (t *tx) mustExist(slug string) error {
	ok, err := t.hasAgent(slug)
	if err == nil && !ok {
		err = unknownAgent(slug)
	}
	return err
}

// hasAgent reports whether an agent (local or remote) has slug.
func (t *tx) hasAgent(slug string) (bool, error) {
	return exists(t.ctx, t.tx, "agent "+slug, `SELECT 1 FROM agents WHERE slug = ?`, slug)
}
