package mesh

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The names layer. A remote agent is (relay id, slug) from the moment a
// trusted relay first shows it; the store pins its name here (plain, or
// slug@label, or slug@relay-id) and only the operator moves a plain name
// (GiveName). A relay's label is its name in the compared form
// (relayName) when that is a slug, no other relay trusted before it has
// the same form and it is not this relay's; else its agents are named with
// its id. Only trusted relays take labels from each other: an entry no
// trusted key signed never makes a trusted relay's name ambiguous.

// labelsLocked returns the label of every trusted relay ("" when it is
// named by its id). Called with n.mu held.
func (n *Node) labelsLocked() map[string]string {
	self := relayName(n.id.Name).Key
	type held struct{ id, firstSeen string }
	first := map[string]held{} // key → the relay trusted first with it
	forms := map[string]relay.RelayNameForm{}
	for id, r := range n.trust {
		if r.State != relay.RelayTrusted {
			continue
		}
		f := relayName(r.Name)
		forms[id] = f
		if f.Key == "" {
			continue
		}
		if h, ok := first[f.Key]; !ok || r.FirstSeen < h.firstSeen || r.FirstSeen == h.firstSeen && id < h.id {
			first[f.Key] = held{id, r.FirstSeen}
		}
	}
	out := make(map[string]string, len(forms))
	for id, f := range forms {
		if f.Label != "" && f.Key != self && first[f.Key].id == id {
			out[id] = f.Label
		}
	}
	return out
}

// labelOf is relay id's label ("" when it is named by its id).
func (n *Node) labelOf(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.labelsLocked()[id]
}

// selfLabel is this relay's own label: a recipient named slug@label is
// its agent slug.
func (n *Node) selfLabel() string { return relayName(n.id.Name).Label }

// nameIssueLocked says why relay id, shown as name, is not named by its
// name here ("" when it is): its name is not safe to compare or is no
// slug, it is named like this relay, or like a relay trusted before it (a
// relay not trusted yet is told apart from every trusted one). Called with
// n.mu held.
func (n *Node) nameIssueLocked(id, name string, labels map[string]string) string {
	f := relayName(name)
	switch {
	case f.Key == "":
		return "its name " + f.Issue + ": its agents are named with its id here"
	case f.Key == relayName(n.id.Name).Key:
		return "it is named like this relay: its agents are named with its id here"
	}
	for other, r := range n.trust {
		if other != id && r.State == relay.RelayTrusted && labels[other] != "" && relayName(r.Name).Key == f.Key {
			return fmt.Sprintf("it is named like relay %s (%s), trusted first: its agents are named with its id here", r.Name, other)
		}
	}
	if f.Label == "" {
		return "its name " + f.Issue + ": its agents are named with its id here"
	}
	return ""
}

// setNames keeps the store's remote names and contests. Called with n.mu held.
func (n *Node) setNames(rn relay.RemoteNames) {
	n.names = make(map[string]relay.MeshName, len(rn.Names))
	n.byAgent = make(map[string]string, len(rn.Names))
	for _, m := range rn.Names {
		n.names[m.Name] = m
		if cur, ok := n.byAgent[m.RelayID+"/"+m.Slug]; !ok || m.Name == m.Slug && cur != m.Slug {
			n.byAgent[m.RelayID+"/"+m.Slug] = m.Name // its plain name, else the first
		}
	}
	n.contests = rn.Contests
	n.conflicts = nil
	for _, c := range rn.Contests {
		if c.HolderRelay == "" {
			n.conflicts = append(n.conflicts, c.Slug)
		}
	}
}

// nameOf is the name agent slug of relay id has here ("" if none yet).
// Called with n.mu held.
func (n *Node) nameOf(id, slug string) string {
	if id == n.id.ID {
		return slug
	}
	return n.byAgent[id+"/"+slug]
}

// relayNameByID is relay id's name as this relay shows it (its id if unknown).
// Called with n.mu held.
func (n *Node) relayNameByID(id string) string {
	if id == n.id.ID {
		return n.id.Name
	}
	if r, ok := n.trust[id]; ok && r.Name != "" {
		return r.Name
	}
	if r, ok := n.relays[id]; ok && r.Name != "" {
		return r.Name
	}
	return id
}

// Contests lists the slugs more than one holder shows: who has the plain
// name and what the others are called here.
func (n *Node) Contests() []NameContest {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]NameContest, 0, len(n.contests))
	for _, c := range n.contests {
		holder := c.HolderRelay
		if holder == "" {
			holder = n.id.ID
		}
		nc := NameContest{Slug: c.Slug, HolderID: holder, Holder: n.relayNameByID(holder)}
		for _, o := range c.Others {
			nc.Others = append(nc.Others, NameHolder{Name: o.Name, RelayID: o.RelayID, Relay: n.relayNameByID(o.RelayID)})
		}
		out = append(out, nc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// contestLines are the contests as Status's directory conflicts say them.
func contestLines(cs []NameContest) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		var others []string
		for _, o := range c.Others {
			others = append(others, fmt.Sprintf("relay %s's as %s", o.Relay, o.Name))
		}
		out = append(out, fmt.Sprintf("%s: also shown by %s; the plain name stays with relay %s until you give it to another (crosschat-relay mesh name %s --relay …)",
			c.Slug, strings.Join(others, ", "), c.Holder, c.Slug))
	}
	return out
}

// Names lists the name of every remote agent here, by name.
func (n *Node) Names() []NameHolder {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]NameHolder, 0, len(n.names))
	for _, m := range n.names {
		out = append(out, NameHolder{Name: m.Name, RelayID: m.RelayID, Relay: n.relayNameByID(m.RelayID), Slug: m.Slug})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// GiveName gives the plain name slug to the agent of that slug on the
// relay named nameOrID (a trusted relay's agent this relay has a name for),
// as the operator chose. The agent that had the plain name takes its
// qualified name; every task, journal entry and worker's allowed senders
// keep naming the same agents. Each of the two renames is its own step, and
// reload (the worker manager's) runs after each for the workers whose
// allowed senders changed: a worker never allows the newly named agent by
// an old name. No directory sync runs meanwhile.
func (n *Node) GiveName(ctx context.Context, slug, nameOrID string, reload func(context.Context, []string) error) ([]relay.NameChange, error) {
	s, err := relay.NormalizeSlug("slug", slug)
	if err != nil {
		return nil, err
	}
	if relay.IsQualified(s) {
		return nil, relay.Errorf(relay.EInvalidRequest, "Give the plain slug (“%s”), not a qualified name.", s[:strings.IndexByte(s, '@')])
	}
	r, err := n.resolveRelay(ctx, nameOrID)
	if err != nil {
		return nil, err
	}
	if r.State != relay.RelayTrusted {
		return nil, relay.Errorf(relay.EInvalidRequest, "Relay %s (%s) is %s: only a trusted relay's agent can have a plain name.", r.Name, r.ID, r.State)
	}
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	target, err := n.opts.Store.PinnedName(ctx, r.ID, s)
	if err != nil {
		return nil, err
	}
	if target == "" {
		return nil, relay.Errorf(relay.EInvalidRequest, "Relay %s has shown no agent “%s” here (crosschat-relay mesh names lists the names).", r.Name, s)
	}
	var out []relay.NameChange
	if target != s {
		holder, err := n.opts.Store.RemoteRelayOf(ctx, s)
		if err != nil {
			return nil, err
		}
		if holder != "" {
			moved := ""
			for _, name := range qualified(s, holder, n.labelOf(holder)) {
				workers, err := n.opts.Store.RenameRemoteAgent(ctx, s, name)
				if relay.ErrorCode(err) == relay.EAgentExists {
					continue
				}
				if err != nil {
					return nil, err
				}
				if err := reload(ctx, workers); err != nil {
					return nil, fmt.Errorf("reload the workers that allowed %s: %w", s, err)
				}
				moved = name
				break
			}
			if moved == "" {
				return nil, relay.Errorf(relay.EAgentExists, "Every name relay %s's %s could take is taken here.", holder, s)
			}
			out = append(out, relay.NameChange{From: s, To: moved})
		}
		workers, err := n.opts.Store.RenameRemoteAgent(ctx, target, s)
		if err != nil {
			return out, err
		}
		if err := reload(ctx, workers); err != nil {
			return out, fmt.Errorf("reload the workers that allowed %s: %w", target, err)
		}
		out = append(out, relay.NameChange{From: target, To: s})
		n.log.Info("mesh: plain name given", "slug", s, "relay", r.Name, "id", r.ID)
	}
	return out, n.syncAgentsLocked(ctx)
}

// qualified are the names agent slug of relay id may take besides its
// plain slug, in order (as the store gives them).
func qualified(slug, id, label string) []string {
	if label == "" {
		return []string{slug + "@" + id}
	}
	return []string{slug + "@" + label, slug + "@" + id}
}
