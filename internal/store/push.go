package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The push stream's rows are written by the triggers of migration 0003, in
// the transaction that queues the task or writes the journal event.

// PushCursor returns the newest push sequence, 0 when there is none.
func (db *DB) PushCursor(ctx context.Context) (int64, error) {
	var seq int64
	if err := db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(sequence), 0) FROM push_events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read push cursor: %w", err)
	}
	return seq, nil
}

// PushEvents returns slug's push events after the cursor, oldest first (at
// most limit, clamped to 1..relay.DefaultPushBatch). The batch's cursor is
// the last event's sequence, or after when there is none. MayHaveMissed is
// set when rows after the cursor were already trimmed.
func (db *DB) PushEvents(ctx context.Context, slug string, after int64, limit int) (relay.PushBatch, error) {
	slug, err := relay.NormalizeSlug("agentSlug", slug)
	if err != nil {
		return relay.PushBatch{}, err
	}
	if after < 0 {
		after = 0
	}
	limit = relay.Clamp(limit, relay.DefaultPushBatch, 1, relay.DefaultPushBatch)
	out := relay.PushBatch{Events: []relay.PushEvent{}, Cursor: after}
	err = db.read(ctx, "read push events", func(tx *sql.Tx) error {
		var oldest sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MIN(sequence) FROM push_events`).Scan(&oldest); err != nil {
			return fmt.Errorf("read oldest push event: %w", err)
		}
		out.MayHaveMissed = after > 0 && oldest.Valid && after < oldest.Int64-1
		// The conversation is read from the task (by primary key), so the
		// push rows written by triggers stay as they are. The agent is
		// bound as +? so that the statement stays prepared (see limitSQL).
		rows, err := tx.QueryContext(ctx, `SELECT p.sequence, p.agent_slug, p.kind, p.task_id, p.title, p.from_slug, p.priority, p.message, p.created_at,
				COALESCE(t.conversation_id, t.id, '')
			FROM push_events p LEFT JOIN tasks t ON t.id = p.task_id
			WHERE p.agent_slug = +? AND p.sequence > ? ORDER BY p.sequence`+limitSQL(limit), slug, after)
		if err != nil {
			return fmt.Errorf("read push events: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var e relay.PushEvent
			if err := rows.Scan(&e.Sequence, &e.Agent, &e.Kind, &e.TaskID, &e.Title, &e.From, &e.Priority, &e.Message, &e.CreatedAt, &e.ConversationID); err != nil {
				return fmt.Errorf("read push events: %w", err)
			}
			out.Events = append(out.Events, e)
			out.Cursor = e.Sequence
		}
		return rows.Err()
	})
	if err != nil {
		return relay.PushBatch{}, err
	}
	return out, nil
}
