package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Live sessions (migration 0016): the agent-CLI sessions that told the
// relay who they are, through a channel's MCP calls or a push stream.

// LiveSession is one live session of an agent, as relay.LiveSession.
type LiveSession = relay.LiveSession

// SeeLiveSession records that s.AgentSlug's session s.ID has its push
// stream open now (the stream's open and refresh), with its name when
// s.Name is set (an empty name keeps the one known): the session is live
// for delivery for relay.LiveStreamWindow. An agent keeps its
// relay.MaxLiveSessionsPerAgent most recently seen sessions, none older
// than relay.LiveSessionRetention.
func (db *DB) SeeLiveSession(ctx context.Context, s relay.LiveSession) error {
	s, err := checkLiveSession(s)
	if err != nil {
		return err
	}
	return db.write(ctx, "see live session", func(t *tx) error {
		if err := t.mustExist(s.AgentSlug); err != nil {
			return err
		}
		return t.seeLiveSession(s.AgentSlug, s.ID, s.Name, true)
	})
}

// checkLiveSession normalizes and checks s's slug, id and name.
func checkLiveSession(s relay.LiveSession) (relay.LiveSession, error) {
	var err error
	if s.AgentSlug, err = relay.NormalizeSlug("agentSlug", s.AgentSlug); err != nil {
		return s, err
	}
	if s.ID, err = relay.LiveSessionID(relay.LiveSessionParam, s.ID); err != nil {
		return s, err
	}
	if s.ID == "" {
		return s, relay.Errorf(relay.EInvalidRequest, "%s: is required.", relay.LiveSessionParam)
	}
	s.Name, err = relay.LiveSessionName(relay.LiveSessionNameParam, s.Name)
	return s, err
}

// seeLiveSession upserts the agent's session in t, its stream seen now
// when stream is set (else its stream record is kept: a post through the
// session); a session new to the agent also trims the agent's old ones.
func (t *tx) seeLiveSession(agent, id, name string, stream bool) error {
	var streamSeen any // NULL: keep the one known
	if stream {
		streamSeen = t.ts
	}
	n, err := t.execCount("see live session", `INSERT INTO live_sessions (agent_slug, session_id, name, last_seen, stream_seen) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent_slug, session_id) DO UPDATE SET last_seen = excluded.last_seen,
			name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE live_sessions.name END,
			stream_seen = COALESCE(excluded.stream_seen, live_sessions.stream_seen)
		WHERE live_sessions.last_seen <> excluded.last_seen OR (excluded.name <> '' AND excluded.name <> live_sessions.name)
			OR (excluded.stream_seen IS NOT NULL AND live_sessions.stream_seen IS NOT excluded.stream_seen)`,
		agent, id, name, t.ts, streamSeen)
	if err != nil || n == 0 {
		return err
	}
	cutoff := relay.FormatTime(t.now.Add(-relay.LiveSessionRetention))
	if _, err := t.exec(`DELETE FROM live_sessions WHERE agent_slug = ? AND (last_seen < ? OR session_id NOT IN (
			SELECT session_id FROM live_sessions WHERE agent_slug = ? ORDER BY last_seen DESC, session_id LIMIT ?))`,
		agent, cutoff, agent, relay.MaxLiveSessionsPerAgent); err != nil {
		return fmt.Errorf("trim live sessions: %w", err)
	}
	return nil
}

// LiveSessions returns agentSlug's live sessions (id and name, when told,
// and when their stream was last seen), most recently seen first: at most relay.MaxLiveSessionsPerAgent, none
// unseen for relay.LiveSessionRetention.
func (db *DB) LiveSessions(ctx context.Context, agentSlug string) ([]LiveSession, error) {
	slug, err := relay.NormalizeSlug("agentSlug", agentSlug)
	if err != nil {
		return nil, err
	}
	cutoff := relay.FormatTime(db.now().Add(-relay.LiveSessionRetention))
	out := []LiveSession{}
	err = db.read(ctx, "list live sessions", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT session_id, name, last_seen, COALESCE(stream_seen, '') FROM live_sessions
			WHERE agent_slug = ? AND last_seen >= ? ORDER BY last_seen DESC, session_id LIMIT ?`,
			slug, cutoff, relay.MaxLiveSessionsPerAgent)
		if err != nil {
			return fmt.Errorf("list live sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			s := LiveSession{AgentSlug: slug}
			if err := rows.Scan(&s.ID, &s.Name, &s.LastSeen, &s.StreamSeen); err != nil {
				return fmt.Errorf("list live sessions: %w", err)
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// liveSessionName is the name agent's session id told, "" when none.
func liveSessionName(ctx context.Context, q queryer, agent, id string) (string, error) {
	var name string
	err := q.QueryRowContext(ctx, `SELECT name FROM live_sessions WHERE agent_slug = ? AND session_id = ?`, agent, id).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read live session: %w", err)
	}
	return name, nil
}
