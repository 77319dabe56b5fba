package relay

import (
	"strings"
	"testing"
)

// Ensure a folded relay name gives the compared form and label the mesh
// relies on: look-alikes of one name share its key or have none, and a
// label is always a slug.
func TestRelayName(t *testing.T) {
	for _, tc := range []struct {
		name, key, label string
		issue            string // a word of the issue; "" for none
	}{
		{"relay-a", "relay-a", "relay-a", ""},
		{"relay a", "relay-a", "relay-a", ""},
		{"  relay \t a ", "relay-a", "relay-a", ""},
		{"relay-a.", "relay-a", "relay-a", ""},
		{"-relay-a_", "relay-a", "relay-a", ""},
		{"build.box_2", "build.box_2", "build.box_2", ""},
		{"relay-a\u200b", "", "", "invisible"},
		{"relay\u00ada", "", "", "invisible"},
		{"relay-a\ufe0f", "", "", "invisible"},
		{"relay\u3164a", "", "", "invisible"},
		{"rel\u0430y-a", "", "", "mixes scripts"},
		{"relay\u2010a", "", "", "not a letter"},
		{"relay@a", "", "", "not a letter"},
		{"r", "r", "", "2–40"},
		{strings.Repeat("a", 41), strings.Repeat("a", 41), "", "2–40"},
		{"büro", "büro", "", "2–40 characters of a–z"},
		{"開発-box", "開発-box", "", "a–z"},
		{"\u0301ab", "", "", "mark on no letter"},
		{"", "", "", "empty"},
		{"0123456789abcdef", "0123456789abcdef", "", "relay id"},
		{"0123456789ABCDEF", "0123456789ABCDEF", "", "a–z"}, // not folded: the mesh folds first
		{"0123456789abcdeg", "0123456789abcdeg", "0123456789abcdeg", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RelayName(tc.name)
			if got.Key != tc.key || got.Label != tc.label || (tc.issue == "") != (got.Issue == "") || !strings.Contains(got.Issue, tc.issue) {
				t.Fatalf("RelayName(%q) = %+v; want key %q, label %q, issue with %q", tc.name, got, tc.key, tc.label, tc.issue)
			}
			if got.Label != "" && !IsQualified("operator@"+got.Label) {
				t.Fatalf("label %q does not make a qualified name", got.Label)
			}
		})
	}
}
