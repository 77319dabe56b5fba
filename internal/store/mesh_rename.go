package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// PinnedName returns the name agent slug of relay relayID has here ("" if
// none): its plain slug when it has it, else the first name it was given.
func (m *Mesh) PinnedName(ctx context.Context, relayID, slug string) (string, error) {
	return optionalString(ctx, m.db.r, "find a remote name", `SELECT slug FROM mesh_agents WHERE relay_id = ? AND remote_slug = ?
		ORDER BY slug = remote_slug DESC, rowid LIMIT 1`, relayID, slug)
}

// RenameRemoteAgent renames placeholder name to newName (which no agent may
// have) wherever a name of an agent is kept: the agent and its mesh row,
// tasks, journal entries, push rows, the outbox and workers' allowed
// senders. A reference to the agent keeps naming it; nothing else changes
// (a task's state goes to no relay for it). It returns the agents whose
// workers' allowed senders changed, which the worker manager reloads.
func (m *Mesh) RenameRemoteAgent(ctx context.Context, name, newName string) ([]string, error) {
	var workers []string
	err := m.db.write(ctx, "rename remote agent", func(t *tx) error {
		workers = workers[:0]
		var remote sql.NullString
		err := t.tx.QueryRowContext(t.ctx, `SELECT m.relay_id FROM agents a LEFT JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = ?`, name).Scan(&remote)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return relay.Errorf(relay.EUnknownAgent, "No agent “%s” is known here.", name)
		case err != nil:
			return fmt.Errorf("find agent %s: %w", name, err)
		case !remote.Valid:
			return relay.Errorf(relay.EInvalidRequest, "“%s” is an agent of this relay; its name stays.", name)
		}
		if free, err := t.nameFree(newName); err != nil {
			return err
		} else if !free {
			return relay.Errorf(relay.EAgentExists, "The name “%s” is taken here.", newName)
		}
		if err := t.renameAgent(name, newName); err != nil {
			return err
		}
		workers, err = t.renameAllowed(name, newName)
		return err
	})
	return workers, err
}

// renameAgent moves agent name to newName: a copy of its row under the new
// name, every reference moved to it, then the old row deleted.
func (t *tx) renameAgent(name, newName string) error {
	cols, err := t.columns("agents")
	if err != nil {
		return err
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		switch c {
		case "slug":
			sel[i] = "?"
		case "display_name":
			sel[i] = "CASE WHEN display_name = slug THEN ? ELSE display_name END"
		default:
			sel[i] = c
		}
	}
	list := strings.Join(cols, ", ")
	args := []any{}
	for _, c := range cols {
		if c == "slug" || c == "display_name" {
			args = append(args, newName)
		}
	}
	if _, err := t.exec(`INSERT INTO agents (`+list+`) SELECT `+strings.Join(sel, ", ")+` FROM agents WHERE slug = ?`, append(args, name)...); err != nil {
		return fmt.Errorf("rename agent %s: %w", name, err)
	}
	for _, ref := range []struct{ table, column string }{
		{"mesh_agents", "slug"}, {"push_agents", "slug"}, {"workers", "agent_slug"}, {"run_tokens", "agent_slug"},
		{"live_sessions", "agent_slug"}, {"tasks", "sender_slug"}, {"tasks", "recipient_slug"}, {"events", "recipient_slug"},
		{"push_events", "agent_slug"}, {"push_events", "from_slug"}, {"mesh_outbox", "event_recipient"},
	} {
		if _, err := t.exec(`UPDATE `+ref.table+` SET `+ref.column+` = ? WHERE `+ref.column+` = ?`, newName, name); err != nil {
			return fmt.Errorf("rename agent %s in %s: %w", name, ref.table, err)
		}
	}
	if _, err := t.exec(`DELETE FROM agents WHERE slug = ?`, name); err != nil {
		return fmt.Errorf("rename agent %s: %w", name, err)
	}
	t.publish(relay.Change{Type: relay.ChangeAgentRemoved, Slug: name})
	return t.agentChanged(newName)
}

// renameAllowed replaces name with newName in every worker's allowed
// senders and returns the workers it changed.
func (t *tx) renameAllowed(name, newName string) ([]string, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT agent_slug, allowed_senders FROM workers`)
	if err != nil {
		return nil, fmt.Errorf("read allowed senders: %w", err)
	}
	changed := map[string]string{}
	for rows.Next() {
		var slug, raw string
		if err := rows.Scan(&slug, &raw); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read allowed senders: %w", err)
		}
		var senders []string
		if json.Unmarshal([]byte(raw), &senders) != nil || !slices.Contains(senders, name) {
			continue
		}
		for i, s := range senders {
			if s == name {
				senders[i] = newName
			}
		}
		changed[slug] = stringsJSON(senders)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("read allowed senders: %w", err)
	}
	var out []string
	for slug, senders := range changed {
		if _, err := t.exec(`UPDATE workers SET allowed_senders = ?, updated_at = ? WHERE agent_slug = ?`, senders, t.ts, slug); err != nil {
			return nil, fmt.Errorf("rename allowed sender of %s: %w", slug, err)
		}
		out = append(out, slug)
	}
	slices.Sort(out)
	return out, nil
}

// columns lists a table's columns in their order.
func (t *tx) columns(table string) ([]string, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("read the columns of %s: %w", table, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
