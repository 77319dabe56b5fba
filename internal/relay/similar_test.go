package relay_test

import (
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
