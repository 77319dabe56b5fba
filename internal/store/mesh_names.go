package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Names of remote agents. A placeholder (an agents row with a mesh_agents
// row, no token) is the name this relay's agents address one agent of
// another relay by; mesh_agents pins it to (relay_id, remote_slug) when it
// is first given, and nothing the directory or an envelope shows moves it.

// localName maps a recipient another relay named slug@<this relay> (its
// label or its id) back to the local slug.
func localName(slug, selfID, selfLabel string) string {
	i := strings.IndexByte(slug, '@')
	if i < 0 {
		return slug
	}
	if q := slug[i+1:]; q == selfID || (q != "" && q == selfLabel) {
		return slug[:i]
	}
	return slug
}

// pinnedName returns the name given to agent slug of relay relayID ("" if
// none yet): its plain name when it has one, else the first it was given
// (databases of earlier versions may hold several).
func (t *tx) pinnedName(relayID, slug string) (string, error) {
	var name string
	err := t.tx.QueryRowContext(t.ctx, `SELECT slug FROM mesh_agents WHERE relay_id = +? AND remote_slug = +?
		ORDER BY slug = remote_slug DESC, rowid LIMIT 1`, relayID, slug).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the name of %s of relay %s: %w", slug, relayID, err)
	}
	return name, nil
}

// nameFree reports whether no agent (local or remote) has name.
func (t *tx) nameFree(name string) (bool, error) {
	taken, err := t.hasAgent(name)
	if err != nil || taken {
		return false, err
	}
	// A deleted agent's name, which its kept tasks still hold, goes to no
	// other relay's agent either (notADeletedAgents).
	if err := t.notADeletedAgents(name); relay.ErrorCode(err) == relay.EAgentExists {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}

// qualifiedNames are the names agent slug of relay relayID may be given
// besides its plain slug, in order: slug@label, then slug@relay-id, which
// no other relay's agent can have.
func qualifiedNames(slug, relayID, label string) []string {
	if label == "" {
		return []string{slug + "@" + relayID}
	}
	return []string{slug + "@" + label, slug + "@" + relayID}
}

// giveName gives agent slug of relay relayID the first free name of
// candidates and returns it ("" when none is free); the caller publishes
// the new agent. a is what the directory shows of it (its zero value for a
// sender seen before its entry).
func (t *tx) giveName(slug, relayID, relayName string, candidates []string, a relay.RemoteAgent) (string, error) {
	for _, name := range candidates {
		free, err := t.nameFree(name)
		if err != nil {
			return "", err
		}
		if !free {
			continue
		}
		display := a.DisplayName
		if display == "" || name != slug {
			display = name // a qualified name shows as itself: its relay's name may be anything
		}
		seen := t.ts
		if !a.Online {
			seen = relay.FormatTime(t.now.Add(-relay.OnlineWindow - 1))
		}
		if _, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence)
			VALUES (?, 'agent', ?, ?, ?, ?, ?, ?, 0)`, name, display, a.ModelSlug, capsJSON(a.Capabilities), nullString(a.Details), t.ts, seen); err != nil {
			return "", fmt.Errorf("store remote agent %s: %w", name, err)
		}
		if _, err := t.exec(`INSERT INTO mesh_agents (slug, relay_id, relay_name, remote_slug) VALUES (?, ?, ?, ?)`,
			name, relayID, relayName, slug); err != nil {
			return "", fmt.Errorf("store remote agent %s: %w", name, err)
		}
		return name, nil
	}
	return "", nil
}

// qualify names the sender slug of relay from as this relay stores it: the
// name pinned to it, else a new qualified name (slug@label, slug@relay-id)
// that no local agent can be. A relay names only its own agents.
func (t *tx) qualify(slug, from, fromName, fromLabel string) (string, error) {
	if i := strings.IndexByte(slug, '@'); i > 0 {
		slug = slug[:i]
	}
	name, err := t.pinnedName(from, slug)
	if err != nil || name != "" {
		return name, err
	}
	if fromName == "" {
		fromName = from
	}
	name, err = t.giveName(slug, from, fromName, qualifiedNames(slug, from, fromLabel), relay.RemoteAgent{})
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("store remote sender %s of relay %s: every name it may have is taken", slug, from)
	}
	return name, t.agentChanged(name)
}

// remoteNames lists every remote name, and the contests among agents: each
// of them whose name is not its plain slug, with the holder of that slug.
func (t *tx) remoteNames(agents []relay.RemoteAgent, names map[string]string) (relay.RemoteNames, error) {
	out := relay.RemoteNames{}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT slug, relay_id, remote_slug FROM mesh_agents ORDER BY slug`)
	if err != nil {
		return out, fmt.Errorf("list remote names: %w", err)
	}
	holders := map[string]string{}
	for rows.Next() {
		var n relay.MeshName
		if err := rows.Scan(&n.Name, &n.RelayID, &n.Slug); err != nil {
			rows.Close()
			return out, fmt.Errorf("list remote names: %w", err)
		}
		out.Names = append(out.Names, n)
		holders[n.Name] = n.RelayID
	}
	if err := rows.Close(); err != nil {
		return out, fmt.Errorf("list remote names: %w", err)
	}
	contests := map[string]int{}
	for _, a := range agents {
		name, ok := names[a.RelayID+"/"+a.Slug]
		if !ok || name == a.Slug {
			continue
		}
		i, seen := contests[a.Slug]
		if !seen {
			holder, remote := holders[a.Slug]
			if !remote {
				if free, err := t.nameFree(a.Slug); err != nil {
					return out, err
				} else if free {
					continue // no one has the plain name (a qualified sender of earlier)
				}
			}
			i = len(out.Contests)
			contests[a.Slug] = i
			out.Contests = append(out.Contests, relay.MeshContest{Slug: a.Slug, HolderRelay: holder})
		}
		out.Contests[i].Others = append(out.Contests[i].Others, relay.MeshName{Name: name, RelayID: a.RelayID, Slug: a.Slug})
	}
	return out, nil
}
