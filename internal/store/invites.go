package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

const inviteColumns = `id, label, created_at, expires_at, max_uses, uses, revoked, display_name, role, first_task`

func scanInvite(row rowScanner, now time.Time) (relay.Invite, error) {
	var (
		inv                          relay.Invite
		label, name, role, firstTask sql.NullString
		maxUses                      sql.NullInt64
	)
	if err := row.Scan(&inv.ID, &label, &inv.CreatedAt, &inv.ExpiresAt, &maxUses, &inv.Uses, &inv.Revoked, &name, &role, &firstTask); err != nil {
		return inv, err
	}
	inv.Label, inv.DisplayName, inv.Role = label.String, name.String, role.String
	inv.MaxUses = int(maxUses.Int64)
	if firstTask.Valid {
		var ft relay.FirstTask
		if err := json.Unmarshal([]byte(firstTask.String), &ft); err != nil {
			return inv, fmt.Errorf("invite %s first task: %w", inv.ID, err)
		}
		inv.FirstTask = &ft
	}
	inv.Active = !inv.Revoked && inv.ExpiresAt > relay.FormatTime(now) && (inv.MaxUses == 0 || inv.Uses < inv.MaxUses)
	inv.Agents = []string{}
	return inv, nil
}

// getInvite loads one invite with the slugs enrolled through it.
func getInvite(ctx context.Context, q queryer, id string, now time.Time) (relay.Invite, error) {
	inv, err := scanInvite(q.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM invites WHERE id = ?`, id), now)
	if errors.Is(err, sql.ErrNoRows) {
		return inv, unknownInvite(id)
	}
	if err != nil {
		return inv, fmt.Errorf("get invite: %w", err)
	}
	rows, err := q.QueryContext(ctx, `SELECT slug FROM agents WHERE invite_id = ? ORDER BY registered_at, rowid`, id)
	if err != nil {
		return inv, fmt.Errorf("get invite agents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var slug string
		if err := rows.Scan(&slug); err != nil {
			return inv, fmt.Errorf("get invite agents: %w", err)
		}
		inv.Agents = append(inv.Agents, slug)
	}
	if err := rows.Err(); err != nil {
		return inv, fmt.Errorf("get invite agents: %w", err)
	}
	return inv, nil
}

// inviteChanged publishes the invite's current state and returns it.
func (t *tx) inviteChanged(id string) (relay.Invite, error) {
	inv, err := getInvite(t.ctx, t.tx, id, t.now)
	if err != nil {
		return inv, err
	}
	c := inv
	t.publish(relay.Change{Type: relay.ChangeInvite, Invite: &c})
	return inv, nil
}

// CreateInvite stores an invite and returns it with its code; only the
// code's hash is kept.
func (db *DB) CreateInvite(ctx context.Context, in relay.InviteInput) (relay.Invite, string, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Invite{}, "", err
	}
	code := relay.NewInviteCode()
	var out relay.Invite
	err = db.write(ctx, "create invite", func(t *tx) error {
		var firstTask any
		if in.FirstTask != nil {
			b, err := json.Marshal(in.FirstTask)
			if err != nil {
				return fmt.Errorf("encode first task: %w", err)
			}
			firstTask = string(b)
		}
		var maxUses any
		if in.MaxUses > 0 {
			maxUses = in.MaxUses
		}
		id := relay.NewID()
		expires := relay.FormatTime(t.now.Add(time.Duration(in.ExpiresInHours * float64(time.Hour))))
		if _, err := t.exec(`INSERT INTO invites (id, code_hash, label, created_at, expires_at, max_uses, display_name, role, first_task)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, relay.HashToken(code), nullString(in.Label), t.ts, expires, maxUses,
			nullString(in.DisplayName), nullString(in.Role), firstTask); err != nil {
			return fmt.Errorf("insert invite: %w", err)
		}
		out, err = t.inviteChanged(id)
		return err
	})
	if err != nil {
		return relay.Invite{}, "", err
	}
	return out, code, nil
}

// ListInvites returns every invite, newest first.
func (db *DB) ListInvites(ctx context.Context) ([]relay.Invite, error) {
	now := db.now()
	var out []relay.Invite
	err := db.read(ctx, "list invites", func(tx *sql.Tx) error {
		var err error
		out, err = queryAll(ctx, tx, "list invites", func(row rowScanner) (relay.Invite, error) { return scanInvite(row, now) },
			`SELECT `+inviteColumns+` FROM invites ORDER BY created_at DESC, rowid DESC`)
		if err != nil {
			return err
		}
		type enrolled struct{ invite, slug string }
		agents, err := queryAll(ctx, tx, "list invite agents", func(row rowScanner) (enrolled, error) {
			var e enrolled
			err := row.Scan(&e.invite, &e.slug)
			return e, err
		}, `SELECT invite_id, slug FROM agents WHERE invite_id IS NOT NULL ORDER BY registered_at, rowid`)
		if err != nil {
			return err
		}
		index := make(map[string]int, len(out))
		for i, inv := range out {
			index[inv.ID] = i
		}
		for _, a := range agents {
			if i, ok := index[a.invite]; ok {
				out[i].Agents = append(out[i].Agents, a.slug)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeInvite revokes an invite; repeating it is harmless.
func (db *DB) RevokeInvite(ctx context.Context, id string) (relay.Invite, error) {
	norm, err := relay.TaskID("id", id)
	if err != nil {
		return relay.Invite{}, unknownInvite(id)
	}
	id = norm
	var out relay.Invite
	err = db.write(ctx, "revoke invite", func(t *tx) error {
		if n, err := t.execCount("revoke invite", `UPDATE invites SET revoked = 1 WHERE id = ?`, id); err != nil {
			return err
		} else if n == 0 {
			return unknownInvite(id)
		}
		out, err = t.inviteChanged(id)
		return err
	})
	return out, err
}

func unknownInvite(id string) error {
	return relay.Errorf(relay.EUnknownInvite, "Unknown invite “%s”.", id)
}

func invalidInvite(reason string) error {
	return relay.Errorf(relay.EInvalidInvite, "%s Ask the relay owner for a new invite.", reason)
}

// Enroll creates an agent from an invite in one transaction: it checks the
// invite, then the slug, inserts the agent with the invite's name and role
// applied and locked, issues its token, counts the use and queues the
// invite's first task for it. A refused enrollment consumes no use.
func (db *DB) Enroll(ctx context.Context, in relay.EnrollInput) (relay.Enrollment, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Enrollment{}, err
	}
	// Refuse unknown, spent and expired invites on the reader pool, so a
	// flood of bad enrollments never queues for the single writer. The
	// write below checks again: the invite may change in between.
	err = db.read(ctx, "enroll check", func(q *sql.Tx) error {
		var (
			expires string
			maxUses sql.NullInt64
			uses    int
			revoked bool
		)
		err := q.QueryRowContext(ctx, `SELECT expires_at, max_uses, uses, revoked FROM invites WHERE code_hash = ?`,
			relay.HashToken(in.Invite)).Scan(&expires, &maxUses, &uses, &revoked)
		return inviteRefusal(err, revoked, expires, relay.FormatTime(db.now().UTC()), maxUses, uses)
	})
	if err != nil {
		return relay.Enrollment{}, err
	}
	var out relay.Enrollment
	err = db.write(ctx, "enroll", func(t *tx) error {
		var (
			id, expires       string
			maxUses           sql.NullInt64
			uses              int
			revoked           bool
			name, role, first sql.NullString
		)
		err := t.tx.QueryRowContext(t.ctx, `SELECT id, expires_at, max_uses, uses, revoked, display_name, role, first_task
			FROM invites WHERE code_hash = ?`, relay.HashToken(in.Invite)).
			Scan(&id, &expires, &maxUses, &uses, &revoked, &name, &role, &first)
		if err := inviteRefusal(err, revoked, expires, t.ts, maxUses, uses); err != nil {
			return err
		}
		if err := t.mustExist(in.Slug); err == nil {
			return relay.Errorf(relay.EAgentExists, "The slug “%s” is taken; choose another and enroll again.", in.Slug).
				WithDetails(map[string]any{"slug": in.Slug})
		} else if relay.ErrorCode(err) != relay.EUnknownAgent {
			return err
		}
		if err := t.notADeletedAgents(in.Slug); err != nil {
			return err
		}
		displayName, details := in.DisplayName, nullString(in.Details)
		if name.Valid {
			displayName = name.String
		}
		if role.Valid {
			details = role.String
		}
		seq, err := maxSequence(t.ctx, t.tx)
		if err != nil {
			return err
		}
		token := relay.NewAgentToken()
		if _, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at,
				last_read_sequence, token_hash, invite_id, display_name_locked, details_locked)
			VALUES (?, 'agent', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.Slug, displayName, in.ModelSlug, capsJSON(in.Capabilities), details, t.ts, t.ts,
			seq, relay.HashToken(token), id, name.Valid, role.Valid); err != nil {
			return fmt.Errorf("insert agent: %w", err)
		}
		if _, err := t.exec(`UPDATE invites SET uses = uses + 1 WHERE id = ?`, id); err != nil {
			return fmt.Errorf("count invite use: %w", err)
		}
		if err := t.agentChanged(in.Slug); err != nil {
			return err
		}
		out.Agent = *t.changes[len(t.changes)-1].Agent
		out.Token = token
		if _, err := t.inviteChanged(id); err != nil {
			return err
		}
		if first.Valid {
			var ft relay.FirstTask
			if err := json.Unmarshal([]byte(first.String), &ft); err != nil {
				return fmt.Errorf("invite first task: %w", err)
			}
			if ft.Priority == 0 {
				ft.Priority = relay.PriorityNormal
			}
			taskID := relay.NewID()
			if _, err := t.exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status,
					created_at, updated_at, depth)
				VALUES (?, ?, ?, ?, ?, '[]', ?, 'queued', ?, ?, 0)`,
				taskID, db.operator, in.Slug, ft.Title, ft.Instructions, ft.Priority, t.ts, t.ts); err != nil {
				return fmt.Errorf("queue first task: %w", err)
			}
			if _, err := t.taskChanged(taskID); err != nil {
				return err
			}
			t.wakeUp(in.Slug)
			out.AssignedTask = &relay.AssignedTask{ID: taskID, Title: ft.Title, Priority: ft.Priority}
		}
		return nil
	})
	if err != nil {
		return relay.Enrollment{}, err
	}
	return out, nil
}

// inviteRefusal says why an invite, read by code with the error err, cannot
// be used at now; nil when it can.
func inviteRefusal(err error, revoked bool, expires, now string, maxUses sql.NullInt64, uses int) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return invalidInvite("This invite code is not valid.")
	case err != nil:
		return fmt.Errorf("find invite: %w", err)
	case revoked:
		return invalidInvite("This invite was revoked.")
	case expires <= now:
		return invalidInvite("This invite has expired.")
	case maxUses.Valid && int64(uses) >= maxUses.Int64:
		return invalidInvite("This invite has already been used.")
	}
	return nil
}
