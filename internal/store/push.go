package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The push stream's rows are written by triggers (migrations 0003 and
// 0009), in the transaction that queues the task or writes the journal
// event, for the agents in push_agents: those whose stream was opened once
// (OpenPush), and every agent that existed before version 9.

// OpenPush makes sure slug's push stream is written from now on, and
// returns since: the stream holds every push event of slug after that
// sequence (0 when it always did), so a cursor older than since may have
// missed some.
func (db *DB) OpenPush(ctx context.Context, slug string) (int64, error) {
	slug, err := relay.NormalizeSlug("agentSlug", slug)
	if err != nil {
		return 0, err
	}
	// A stream opened before costs a read, not a write.
	var since int64
	err = db.r.QueryRowContext(ctx, `SELECT since FROM push_agents WHERE slug = ?`, slug).Scan(&since)
	if err == nil {
		return since, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("open push stream: %w", err)
	}
	err = db.write(ctx, "open push stream", func(t *tx) error {
		if err := t.mustExist(slug); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT OR IGNORE INTO push_agents (slug, since)
			VALUES (?, (SELECT COALESCE(MAX(sequence), 0) FROM push_events))`, slug); err != nil {
			return fmt.Errorf("follow push stream: %w", err)
		}
		return t.tx.QueryRowContext(t.ctx, `SELECT since FROM push_agents WHERE slug = ?`, slug).Scan(&since)
	})
	return since, err
}

// PushCursor returns the newest push sequence, 0 when there is none.
func (db *DB) PushCursor(ctx context.Context) (int64, error) {
	var seq int64
	if err := db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(sequence), 0) FROM push_events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read push cursor: %w", err)
	}
	return seq, nil
}

// SessionPushEvents returns the push events of s.AgentSlug after the cursor,
// oldest first (at most limit, clamped to 1..relay.DefaultPushBatch). The
// batch's cursor is the last event's sequence, or after when there is
// none; MayHaveMissed is set when rows after the cursor were already
// trimmed; More is set when limit rows were read. For a live session (s.ID
// set; all of the agent's events when s.ID is "") updates on tasks posted
// through another session (reply_session) and tasks meant for another
// session (target_session naming neither s.ID nor s.Name) are left out, and
// the cursor passes over them.
func (db *DB) SessionPushEvents(ctx context.Context, s relay.LiveSession, after int64, limit int) (relay.PushBatch, error) {
	slug, err := relay.NormalizeSlug("agentSlug", s.AgentSlug)
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
		// The conversation is read from the task (by primary key); the
		// sessions a row is for are the row's own. The agent is
		// bound as +? so that the statement stays prepared (see limitSQL).
		// A completion carries its result: the task's completed report
		// of that moment (a reopened task may be completed again later).
		rows, err := tx.QueryContext(ctx, `SELECT p.sequence, p.agent_slug, p.kind, p.task_id, p.title, p.from_slug, p.priority, p.message, p.created_at,
				COALESCE(t.conversation_id, t.id, ''), COALESCE(m.mark, ''), p.reply_session, p.target_session,
				COALESCE(t.hops, 0), COALESCE(t.reply_session, ''),
				CASE WHEN p.kind = 'task-completed' THEN COALESCE((SELECT substr(r.result, 1, ?) FROM reports r
					WHERE r.task_id = p.task_id AND r.kind = 'completed' AND r.created_at <= p.created_at ORDER BY r.rowid DESC LIMIT 1), '') ELSE '' END
			FROM push_events p LEFT JOIN tasks t ON t.id = p.task_id LEFT JOIN mesh_tasks m ON m.task_id = p.task_id
			WHERE p.agent_slug = +? AND p.sequence > ? ORDER BY p.sequence`+limitSQL(limit), relay.MaxPushResult, slug, after)
		if err != nil {
			return fmt.Errorf("read push events: %w", err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var e relay.PushEvent
			var reply, target sql.NullString
			if err := rows.Scan(&e.Sequence, &e.Agent, &e.Kind, &e.TaskID, &e.Title, &e.From, &e.Priority, &e.Message, &e.CreatedAt, &e.ConversationID, &e.Signature,
				&reply, &target, &e.Hops, &e.ReplySession, &e.Result); err != nil {
				return fmt.Errorf("read push events: %w", err)
			}
			n++
			out.Cursor = e.Sequence
			if forSession(s, reply, target) {
				out.Events = append(out.Events, e)
			}
		}
		out.More = n == limit
		return rows.Err()
	})
	if err != nil {
		return relay.PushBatch{}, err
	}
	return out, nil
}

// forSession reports whether a push row reaches the stream of live session
// s (every stream, when s.ID is ""). reply and target are the row's own
// copies (migration 0017): reply is set when the row's agent sent the task
// (the session it was posted through, "" for none), target when the agent
// is its recipient (the session it is meant for, "" for none). A row
// reaches s when s is on a side the agent takes, and every session when
// neither is known.
func forSession(s relay.LiveSession, reply, target sql.NullString) bool {
	if s.ID == "" || (!reply.Valid && !target.Valid) {
		return true
	}
	if reply.Valid && (reply.String == "" || reply.String == s.ID) {
		// An update on a task the agent sent: for the session that sent it.
		return true
	}
	// A task, or a cancellation or change request of a task, the agent
	// received: for the session it is meant for.
	return target.Valid && (target.String == "" || target.String == s.ID || (s.Name != "" && target.String == s.Name))
}
