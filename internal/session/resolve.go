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

// Source gathers the sessions one agent can be reached in from one place,
// for a task sender posts: sessions bound to its workers, sessions its
// any-session worker may resume, live sessions whose channel announced
// their name. A source with nothing for the agent (or nothing sender may
// reach: a worker that does not take sender's tasks) returns an empty
// Found.
type Source func(ctx context.Context, sender, agent string) (Found, error)

// Resolver resolves a task's targetSession when it is posted, against the
// sessions its recipient can be reached in. Adding a source is one line.
type Resolver struct {
	Sources []Source
}

// maxBeyondScan bounds how many sessions past the lookup bound a refusal
// reads to say that the bound hid a match.
const maxBeyondScan = 2000

// LookupBudget bounds the time one resolution may take reading the CLIs'
// session files; past it the post is refused.
const LookupBudget = 2 * time.Second

// maxCandidates bounds the candidates a session_ambiguous error lists.
const maxCandidates = 10

// minSimilar is the shortest ref for which similar names are suggested.
const minSimilar = 3

// Candidate is one session offered in a session_ambiguous error.
type Candidate struct {
	Tool string `json:"tool,omitempty"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// LastActive is RFC 3339 ("" when unknown).
	LastActive string `json:"lastActive,omitempty"`
}

// Resolve returns the session of agent that ref names for a task sender
// posts: its id (an id always works), else its exact name (a person's name:
// Claude Code's custom title, Codex's session index name), else its exact
// generated title when no named session has that name. No match is
// session_not_found with up to five similar names (never a generated
// title; and the lookup bound when the match lies past it); several are
// session_ambiguous with up to maxCandidates candidates and their ids. The
// errors name no folder. Reading takes at most LookupBudget.
func (r Resolver) Resolve(ctx context.Context, sender, agent, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	ctx, cancel := context.WithTimeout(ctx, LookupBudget)
	defer cancel()
	var all, beyond []Session
	seen := map[string]bool{}
	bound := 0
	for _, src := range r.Sources {
		f, err := src(ctx, sender, agent)
		if err != nil {
			if ctx.Err() != nil {
				return Session{}, timedOut(agent, ref)
			}
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
	if s, ok := findExact(all, ref); ok {
		return s, nil
	}
	if s, ok := findExact(beyond, ref); ok { // an id always works, even past the bound, in the source's folders
		if s, ok := readBeyond(ctx, s); ok {
			return s, nil
		}
	}
	hits := matches(all, ref)
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		err := notFound(ctx, agent, ref, all, beyond, bound)
		if ctx.Err() != nil {
			return Session{}, timedOut(agent, ref)
		}
		return Session{}, err
	}
	cands := make([]Candidate, 0, min(len(hits), maxCandidates))
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions%s are named “%s”; name one by id in targetSession:", len(hits), of(agent), clip(ref))
	for i, s := range hits[:cap(cands)] {
		c := Candidate{Tool: s.Tool, ID: s.ID, Name: s.Name}
		if !s.LastActive.IsZero() {
			c.LastActive = relay.FormatTime(s.LastActive)
		}
		cands = append(cands, c)
		fmt.Fprintf(&b, " %s", s.ID)
		if s.Tool != "" || !s.LastActive.IsZero() {
			fmt.Fprintf(&b, " (%s)", strings.Trim(strings.Join([]string{s.Tool, lastActive(s.LastActive)}, ", "), ", "))
		}
		if i < cap(cands)-1 {
			b.WriteString(";")
		}
	}
	if len(hits) > len(cands) {
		fmt.Fprintf(&b, "; and %d more", len(hits)-len(cands))
	}
	b.WriteString(".")
	return Session{}, relay.Errorf(relay.ESessionAmbiguous, "%s", b.String()).
		WithDetails(map[string]any{"targetSession": ref, "candidates": cands})
}

// timedOut refuses a post whose session lookup took longer than
// LookupBudget.
func timedOut(agent, ref string) error {
	return relay.Errorf(relay.EInvalidRequest, "Looking up the session “%s”%s took longer than %s, so the task was not posted; name the session by id, or try again.", clip(ref), of(agent), LookupBudget).
		WithDetails(map[string]any{"targetSession": ref})
}

// readBeyond reads a session listed past its source's bound and applies the
// source's folder check; ok is false when it cannot be read or ran outside
// the source's folders.
func readBeyond(ctx context.Context, s Session) (Session, bool) {
	if s.grp == nil {
		return s, s.keep == nil
	}
	full, ok, err := readGroup(ctx, s.Tool, *s.grp)
	if err != nil || !ok || full.ID != s.ID {
		return Session{}, false
	}
	if full.Name == "" {
		full.Name = s.Name // a Codex thread's name, from the index
	}
	if s.keep != nil && !s.keep(full.Folder) {
		return Session{}, false
	}
	return full, true
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

// notFound is session_not_found: similar names (a person's names only,
// for a ref of at least minSimilar characters), and the bound when a
// session past it, in its source's folders, has the name.
func notFound(ctx context.Context, agent, ref string, all, beyond []Session, bound int) error {
	var names []string
	for _, s := range all {
		if s.Named() {
			names = append(names, s.Name)
		}
	}
	sim := []string{}
	if len([]rune(ref)) >= minSimilar {
		if got := relay.Similar(ref, names, strings.ToLower, 5); got != nil {
			sim = got
		}
	}
	msg := fmt.Sprintf("No session “%s”%s can take this task: none of the sessions it can be reached in (its workers' sessions, the sessions its any-session worker may resume, its live sessions) has that id or exact name (names match exactly).", clip(ref), of(agent))
	details := map[string]any{"targetSession": ref, "similar": sim}
	for i, s := range beyond {
		if i >= maxBeyondScan || ctx.Err() != nil {
			break
		}
		if s.Tool == Codex && s.Name != ref {
			continue // Codex names are in the index: no need to read the thread
		}
		full, ok := readBeyond(ctx, s) // read on the refusal's path only, cached
		if ok && full.Name != "" && full.Name == ref {
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

// clip shortens ref for an error's text.
func clip(ref string) string { return cleanLabel(ref) }

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
// as Beyond (read, and checked with keep, only when a ref matches one).
// ctx stops the reading.
func (st Store) Within(ctx context.Context, tool string, bound int, keep func(folder string) bool) (Found, error) {
	l, err := st.recent(ctx, tool, bound)
	if err != nil {
		return Found{}, err
	}
	f := Found{Bound: l.Bound}
	for _, s := range l.Beyond {
		s.keep = keep
		f.Beyond = append(f.Beyond, s)
	}
	for _, s := range l.Sessions {
		if keep == nil || keep(s.Folder) {
			f.Sessions = append(f.Sessions, s)
		}
	}
	return f, nil
}
