package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

const eventColumns = `sequence, recipient_slug, type, task_id, summary, created_at`

// unreadEventsSQL reads an agent's events after a sequence. The journal has
// no index by recipient (migration 0011: every event would write a page of
// that index of its own), so the read walks the events after that sequence,
// all agents', in order. It starts after the agent's cursor or, when
// further on, after the newest event its last read walked to (walk): an
// agent that has nothing to read walks only what came since, and the first
// read after a start walks at most the journal's bound (MaxEvents).
const unreadEventsSQL = `SELECT ` + eventColumns + ` FROM events WHERE recipient_slug = +? AND sequence > ? ORDER BY sequence`

// walk is how far a read_updates walked the journal: it found no event for
// slug after the ones it returned, up to sequence to. The writer keeps it
// in DB.walked once the read's transaction has committed, never before: an
// event of a batch that fails to commit gives its sequence back, and the
// next event, perhaps for slug, takes it.
type walk struct {
	slug string
	to   int64
}

func scanEvents(rows *sql.Rows) ([]relay.Event, error) {
	defer rows.Close()
	out := []relay.Event{}
	for rows.Next() {
		var e relay.Event
		if err := rows.Scan(&e.Sequence, &e.RecipientSlug, &e.Type, &e.TaskID, &e.Summary, &e.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ReadUpdates returns the agent's events after its cursor (at most limit,
// default 25, clamped to 1..100), advances the cursor and refreshes its
// presence, all in one transaction. When the journal was trimmed past the
// cursor it sets MayHaveMissedUpdates and, if nothing is left to read, moves
// the cursor to just before the oldest kept event.
func (db *DB) ReadUpdates(ctx context.Context, slug string, limit int) (relay.Updates, error) {
	slug, err := relay.NormalizeSlug("agentSlug", slug)
	if err != nil {
		return relay.Updates{}, err
	}
	limit = relay.Clamp(limit, relay.DefaultReadLimit, 1, relay.MaxUpdatesLimit)
	var out relay.Updates
	err = db.write(ctx, "read updates", func(t *tx) error {
		var (
			lastRead, newest int64
			oldest           sql.NullInt64
		)
		err := t.tx.QueryRowContext(t.ctx, `SELECT last_read_sequence, (SELECT MIN(sequence) FROM events),
			(SELECT COALESCE(MAX(sequence), 0) FROM events) FROM agents WHERE slug = ?`, slug).
			Scan(&lastRead, &oldest, &newest)
		if errors.Is(err, sql.ErrNoRows) {
			return unknownAgent(slug)
		}
		if err != nil {
			return fmt.Errorf("read cursor: %w", err)
		}
		missed := oldest.Valid && lastRead < oldest.Int64-1
		rows, err := t.tx.QueryContext(t.ctx, unreadEventsSQL+limitSQL(limit), slug, max(lastRead, t.db.walked[slug]))
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		updates, err := scanEvents(rows)
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		if len(updates) < limit {
			// The walk reached the newest event: none after it is for slug.
			t.walk = walk{slug: slug, to: newest}
		}
		cursor := lastRead
		switch {
		case len(updates) > 0:
			cursor = updates[len(updates)-1].Sequence
		case missed:
			cursor = oldest.Int64 - 1
		}
		switch {
		case cursor != lastRead && !relay.IsByOperator(t.ctx):
			// The cursor and the presence in one statement.
			if err := t.touchCursor(slug, cursor); err != nil {
				return err
			}
		default:
			if cursor != lastRead {
				if _, err := t.exec(`UPDATE agents SET last_read_sequence = ? WHERE slug = ?`, cursor, slug); err != nil {
					return fmt.Errorf("advance cursor: %w", err)
				}
			}
			if err := t.touch(slug); err != nil {
				return err
			}
		}
		out = relay.Updates{Updates: updates, Cursor: cursor, MayHaveMissedUpdates: missed}
		return nil
	})
	return out, err
}

// ListEvents returns journal events newest first, optionally only those
// delivered to f.Agent and older than f.Before; the limit defaults to 50 and
// is clamped to 1..500.
func (db *DB) ListEvents(ctx context.Context, f relay.EventFilter) ([]relay.Event, error) {
	query := `SELECT ` + eventColumns + ` FROM events WHERE 1 = 1`
	var args []any
	if a := strings.ToLower(strings.TrimSpace(f.Agent)); a != "" {
		query += ` AND recipient_slug = +?` // stays prepared (see limitSQL)
		args = append(args, a)
	}
	if f.Before > 0 {
		query += ` AND sequence < ?`
		args = append(args, f.Before)
	}
	query += ` ORDER BY sequence DESC` + limitSQL(relay.Clamp(f.Limit, relay.DefaultEventLimit, 1, relay.MaxListLimit))
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}
