package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Found is what one source offers: the sessions an agent can be reached
// in from there.
type Found struct {
	// Sessions are the sessions the source can serve.
	Sessions []Session
	// Beyond are sessions the source knows of but did not read (past its
	// Bound): a ref matching one of them is refused with the bound named.
	Beyond []Session
	// Bound is the source's lookup bound per CLI (0: none).
	Bound int
}

// Source gathers the sessions one agent can be reached in from one place:
// sessions bound to its workers, sessions its any-session worker may
// resume, live sessions whose channel announced their name. A source with
// nothing for the agent returns an empty Found.
type Source func(ctx context.Context, agent string) (Found, error)

// Resolver resolves a task's targetSession when it is posted, against the
// sessions its recipient can be reached in. Adding a source is one line.
type Resolver struct {
	Sources []Source
}

// maxBeyondScan bounds how many sessions past the lookup bound a refusal
// reads to say that the bound hid a match.
const maxBeyondScan = 2000

// Candidate is one session offered in a session_ambiguous error.
type Candidate struct {
	Tool string `json:"tool,omitempty"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Title is the generated title (when it has no name).
	Title  string `json:"title,omitempty"`
	Folder string `json:"folder,omitempty"`
	// LastActive is RFC 3339 ("" when unknown).
	LastActive string `json:"lastActive,omitempty"`
}

// Resolve returns the session of agent that ref names: its id (an id
// always works), else its exact name (a person's name: Claude Code's custom
// title, Codex's session index name), else its exact generated title when
// no named session has that name. No match is session_not_found with up to
// five similar names (and the lookup bound when the match lies past it);
// several are session_ambiguous with the candidates and their ids.
func (r Resolver) Resolve(ctx context.Context, agent, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	var all, beyond []Session
	seen := map[string]bool{}
	bound := 0
	for _, src := range r.Sources {
		f, err := src(ctx, agent)
		if err != nil {
			return Session{}, fmt.Errorf("sessions of %s: %w", agent, err)
		}
		for _, s := range f.Sessions {
			if !seen[s.ID] {
				seen[s.ID] = true
				all = append(all, s)
			}
		}
		beyond = append(beyond, f.Beyond...)
		bound = max(bound, f.Bound)
	}
	if s, ok := findExact(append(all, beyond...), ref); ok { // an id always works, even past the bound
		return s, nil
	}
	hits := matches(all, ref)
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return Session{}, notFound(agent, ref, all, beyond, bound)
	}
	cands := make([]Candidate, len(hits))
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions%s are named “%s”; name one by id in targetSession:", len(hits), of(agent), ref)
	for i, s := range hits {
		cands[i] = Candidate{Tool: s.Tool, ID: s.ID, Name: s.Name, Folder: s.Folder}
		if !s.Named() {
			cands[i].Title = s.Title
		}
		if !s.LastActive.IsZero() {
			cands[i].LastActive = relay.FormatTime(s.LastActive)
		}
		fmt.Fprintf(&b, " %s", s.ID)
		if s.Tool != "" || s.Folder != "" {
			fmt.Fprintf(&b, " (%s)", strings.Trim(strings.Join([]string{s.Tool, s.Folder, lastActive(s.LastActive)}, ", "), ", "))
		}
		if i < len(hits)-1 {
			b.WriteString(";")
		}
	}
	b.WriteString(".")
	return Session{}, relay.Errorf(relay.ESessionAmbiguous, "%s", b.String()).
		WithDetails(map[string]any{"targetSession": ref, "candidates": cands})
}

// findExact finds the session whose id is ref.
func findExact(all []Session, ref string) (Session, bool) {
	for _, s := range all {
		if s.ID == ref {
			return s, true
		}
	}
	return Session{}, false
}

// matches are the sessions named ref exactly; only when none is, those
// without a name whose generated title is ref.
func matches(all []Session, ref string) []Session {
	var hits []Session
	for _, s := range all {
		if s.Name == ref {
			hits = append(hits, s)
		}
	}
	if len(hits) > 0 {
		return hits
	}
	for _, s := range all {
		if !s.Named() && s.Title != "" && s.Title == ref {
			hits = append(hits, s)
		}
	}
	return hits
}

// notFound is session_not_found: similar names, and the bound when a
// session past it has the id or name.
func notFound(agent, ref string, all, beyond []Session, bound int) error {
	labels := make([]string, len(all))
	for i, s := range all {
		labels[i] = s.Label()
	}
	sim := relay.Similar(ref, labels, strings.ToLower, 5)
	if sim == nil {
		sim = []string{}
	}
	msg := fmt.Sprintf("No session “%s”%s can take this task: none of the sessions it can be reached in (its workers' sessions, the sessions its any-session worker may resume, its live sessions) has that id or exact name (names match exactly).", ref, of(agent))
	details := map[string]any{"targetSession": ref, "similar": sim}
	for i, s := range beyond {
		if s.Tool == ClaudeCode && s.Name == "" && i < maxBeyondScan && s.Path != "" {
			// Claude Code's names are inside the transcript: read it now,
			// on the refusal's path only.
			if full, err := readClaude(s.Path); err == nil {
				s.Name = full.Name
			}
		}
		if s.Name != "" && s.Name == ref {
			msg += fmt.Sprintf(" A %s session %s matches, but it is older than the newest %d sessions this relay looks through; post with a newer session or bind a worker to it.", s.Tool, s.ID, bound)
			details["bound"] = bound
			details["olderMatch"] = s.ID
			break
		}
	}
	if len(sim) > 0 {
		msg += " Similar: “" + strings.Join(sim, "”, “") + "”."
	}
	return relay.Errorf(relay.ESessionNotFound, "%s", msg).WithDetails(details)
}

// of is " of “agent”", or "" without an agent.
func of(agent string) string {
	if agent == "" {
		return ""
	}
	return " of “" + agent + "”"
}

func lastActive(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return "last active " + relay.FormatTime(t)
}

// Within is what a source over this computer's sessions offers: the
// newest bound sessions of tool ("" for both; bound per CLI, 0: all) whose
// folder keep accepts (nil: every folder), and the sessions past the bound
// as Beyond.
func (st Store) Within(tool string, bound int, keep func(folder string) bool) (Found, error) {
	l, err := st.Recent(tool, bound)
	if err != nil {
		return Found{}, err
	}
	f := Found{Beyond: l.Beyond, Bound: l.Bound}
	for _, s := range l.Sessions {
		if keep == nil || keep(s.Folder) {
			f.Sessions = append(f.Sessions, s)
		}
	}
	return f, nil
}
