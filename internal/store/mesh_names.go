package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// RelayLabel is the part after @ in the qualified names of a relay's
// agents: its name in slug characters, or "" when nothing of it is left.
func RelayLabel(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	l := strings.Trim(b.String(), "-._")
	if len(l) > 40 {
		l = strings.Trim(l[:40], "-._")
	}
	if len(l) < 2 {
		return ""
	}
	return l
}

// localName maps a recipient another relay named slug@<this relay> back to
// the local slug.
func localName(slug, selfID, selfName string) string {
	i := strings.IndexByte(slug, '@')
	if i < 0 {
		return slug
	}
	if q := slug[i+1:]; q == selfID || (q != "" && q == RelayLabel(selfName)) {
		return slug[:i]
	}
	return slug
}

// qualify names the sender slug of relay from as this relay stores it: the
// plain slug when the directory (of trusted relays) gives it to that relay,
// else slug@relay-name (slug@relay-id when another relay holds that name),
// a placeholder of that relay which no local agent can be.
func (t *tx) qualify(slug, from, fromName string) (string, error) {
	if i := strings.IndexByte(slug, '@'); i > 0 {
		slug = slug[:i] // a relay names only its own agents
	}
	var owner sql.NullString
	err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id FROM mesh_agents WHERE slug = ?`, slug).Scan(&owner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("find agent %s: %w", slug, err)
	}
	if owner.Valid && owner.String == from {
		return slug, nil
	}
	q := ""
	if l := RelayLabel(fromName); l != "" && !t.nameShared(fromName, from) {
		q = slug + "@" + l
		var holder string
		err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id FROM mesh_agents WHERE slug = ?`, q).Scan(&holder)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("find agent %s: %w", q, err)
		}
		if err == nil && holder != from {
			q = ""
		}
	}
	if q == "" {
		q = slug + "@" + from
	}
	if fromName == "" {
		fromName = from
	}
	res, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, registered_at, last_seen_at, last_read_sequence)
		VALUES (?, 'agent', ?, '', '[]', ?, ?, 0) ON CONFLICT (slug) DO NOTHING`, q, slug+"@"+fromName, t.ts, t.ts)
	if err != nil {
		return "", fmt.Errorf("store remote sender %s: %w", q, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", err
	} else if n > 0 {
		if _, err := t.exec(`INSERT INTO mesh_agents (slug, relay_id, relay_name) VALUES (?, ?, ?)
			ON CONFLICT (slug) DO UPDATE SET relay_id = excluded.relay_id, relay_name = excluded.relay_name`, q, from, fromName); err != nil {
			return "", fmt.Errorf("store remote sender %s: %w", q, err)
		}
		if err := t.agentChanged(q); err != nil {
			return "", err
		}
	}
	return q, nil
}

// remoteConversation is the conversation column (NULL when the task started
// its own), hop count and target session column of a task another relay
// sent, so the hand-off limit keeps counting across relays. Hops below the
// depth are not taken; an invalid id or session name is dropped.
func remoteConversation(rt relay.Task) (conv any, hops int, target any) {
	if rt.ConversationID != "" && rt.ConversationID != rt.ID {
		if id, err := relay.TaskID("conversationId", rt.ConversationID); err == nil {
			conv = id
		}
	}
	if s, err := relay.TargetSession("targetSession", rt.TargetSession); err == nil && s != "" {
		target = s
	}
	return conv, max(rt.Hops, rt.Depth, 0), target
}

// nameShared reports whether another relay recorded here goes by name (a
// relay that renamed itself after another, or twins): its senders are then
// qualified with the relay id, never a name that looks like the other's.
func (t *tx) nameShared(name, id string) bool {
	var n int
	err := t.tx.QueryRowContext(t.ctx, `SELECT COUNT(*) FROM mesh_relays WHERE name = ? COLLATE NOCASE AND relay_id != ?`, name, id).Scan(&n)
	return err != nil || n > 0
}
