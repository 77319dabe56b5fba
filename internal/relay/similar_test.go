package relay_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func TestSimilar(t *testing.T) {
	names := []string{"api", "api-server", "web", "Webapp", "", "docs", "api", "billing", "bilxing"}
	for _, tc := range []struct {
		ref   string
		limit int
		want  []string
	}{
		{"api", 5, []string{"api", "api-server"}},      // itself, contains; "web" is three edits away
		{"WEBAPP", 5, []string{"web", "Webapp"}},       // folded: "webapp" contains "web"
		{"billing", 5, []string{"billing", "bilxing"}}, // one edit
		{"docz", 5, []string{"docs"}},
		{"api", 1, []string{"api"}},
		{"zzzzzzzzzz", 5, nil},
		{"", 5, nil}, // the empty name contains nothing, and every name is over two edits away
	} {
		got := relay.Similar(tc.ref, names, strings.ToLower, tc.limit)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Similar(%q, limit %d) = %q, want %q", tc.ref, tc.limit, got, tc.want)
		}
	}
}

func TestSimilarAgents(t *testing.T) {
	agents := []relay.Agent{{Slug: "bob"}, {Slug: "bobby"}, {Slug: "carol"}}
	unknown := func(slug string) error {
		return relay.Errorf(relay.EUnknownAgent, "Unknown agent “%s”.", slug).WithDetails(map[string]any{"slug": slug})
	}
	for _, tc := range []struct {
		name    string
		err     error
		slug    string
		message string // "" expects err back unchanged
		similar []string
	}{
		{"a near name", unknown("bobb"), "bobb", "Unknown agent “bobb”. Similar: bob, bobby (see list_agents).", []string{"bob", "bobby"}},
		{"nobody alike", unknown("zed-zed-zed"), "zed-zed-zed", "", nil},
		{"typed in capitals, with spaces", unknown("bobb"), " Bobb ", "Unknown agent “bobb”. Similar: bob, bobby (see list_agents).", []string{"bob", "bobby"}},
		{"another slug refused (the sender)", unknown("bobb"), "carol", "", nil},
		{"a retired agent", relay.RetiredRecipient("bobb"), "bobb", "", nil},
		{"another code", relay.Errorf(relay.EInvalidRequest, "bad").WithDetails(map[string]any{"slug": "bobb"}), "bobb", "", nil},
		{"not a relay error", errors.New("disk full"), "bobb", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := relay.SimilarAgents(fmt.Errorf("post: %w", tc.err), tc.slug, agents)
			var e *relay.Error
			if tc.message == "" {
				if !errors.Is(got, tc.err) {
					t.Fatalf("got %v, want %v unchanged", got, tc.err)
				}
				return
			}
			if !errors.As(got, &e) || e.Code != relay.EUnknownAgent || e.Message != tc.message {
				t.Fatalf("got %v, want unknown_agent %q", got, tc.message)
			}
			if sim, _ := e.Details["similar"].([]string); !slices.Equal(sim, tc.similar) || e.Details["slug"] != strings.ToLower(strings.TrimSpace(tc.slug)) {
				t.Fatalf("details %v, want slug %q and similar %q", e.Details, tc.slug, tc.similar)
			}
		})
	}
}

// BenchmarkSimilarManyAgents is the "did you mean" of a refused post on a
// relay of 10,000 agents with long slugs: of many lengths, or all of the
// refused name's length (go test -bench SimilarManyAgents ./internal/relay).
func BenchmarkSimilarManyAgents(b *testing.B) {
	for _, shape := range []struct {
		name string
		slug func(i int) string
	}{
		{"lengths", func(i int) string { return fmt.Sprintf("agent-%d-", i) + strings.Repeat("x", i%70) }},
		{"one-length", func(i int) string { return fmt.Sprintf("agent-%05d-", i) + strings.Repeat("x", 68) }},
	} {
		b.Run(shape.name, func(b *testing.B) {
			names := make([]string, 10000)
			for i := range names {
				names[i] = shape.slug(i)
			}
			ref := strings.Repeat("q", 80)
			for b.Loop() {
				relay.Similar(ref, names, strings.ToLower, 5)
			}
		})
	}
}
