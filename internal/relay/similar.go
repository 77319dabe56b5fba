package relay

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Similar returns up to limit of names that look like ref, for the "did you
// mean" of a name nobody has: one contains the other, or they are a few edits
// apart (at most two, or a quarter of ref's length). fold puts ref and each
// name in the form they are compared in (lower case, a normalised id); names
// are returned as given, each once, empty ones never.
func Similar(ref string, names []string, fold func(string) string, limit int) []string {
	want := fold(ref)
	size := utf8.RuneCountInString(want)
	reach := max(2, size/4)
	var out []string
	for _, n := range names {
		if n == "" || slices.Contains(out, n) {
			continue
		}
		f := fold(n)
		// Lengths further apart than reach are more edits apart: no
		// distance is worked out for them.
		near := abs(utf8.RuneCountInString(f)-size) <= reach
		if containsEither(f, want) || near && editsWithin(want, f, reach) {
			out = append(out, n)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// SimilarAgents adds a "did you mean" to err when it refuses slug as an
// unknown agent: the slugs of agents that look like it, in the message and
// as details.similar, for a sender who mistyped a name. Any other error (a
// retired agent's refusal among them), or one no agent looks like, comes
// back as it is.
func SimilarAgents(err error, slug string, agents []Agent) error {
	var e *Error
	slug = strings.ToLower(strings.TrimSpace(slug)) // as the refusal names it
	if !errors.As(err, &e) || e.Code != EUnknownAgent || e.Details["slug"] != slug || e.Details["retired"] == true {
		return err
	}
	names := make([]string, 0, len(agents))
	for _, a := range agents {
		names = append(names, a.Slug)
	}
	sim := Similar(slug, names, strings.ToLower, 5)
	if len(sim) == 0 {
		return err
	}
	details := maps.Clone(e.Details)
	details["similar"] = sim
	return Errorf(EUnknownAgent, "%s Similar: %s (see list_agents).", e.Message, strings.Join(sim, ", ")).WithDetails(details)
}

func abs(n int) int { return max(n, -n) }

func containsEither(a, b string) bool {
	return len(a) > 0 && len(b) > 0 && (strings.Contains(a, b) || strings.Contains(b, a))
}

// editsWithin reports whether a and b are at most limit edits apart (the
// Levenshtein distance in runes). It stops at the first row whose every
// cell is past limit: no path through it comes back under.
func editsWithin(a, b string, limit int) bool {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return false
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)] <= limit
}
