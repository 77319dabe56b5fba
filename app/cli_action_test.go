package app

import (
	"errors"
	"strings"
	"testing"
)

// Ensure a verb's action is split from its flags, and a missing or unknown
// one is a usage error naming every action (and the word given, if any).
func TestVerbAction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		action string
		rest   string
		err    string
	}{
		{"action and flags", []string{"status", "--json"}, "status", "--json", ""},
		{"action alone", []string{"install"}, "install", "", ""},
		{"nothing", nil, "", "", "usage: service needs install, uninstall or status"},
		{"a flag first", []string{"--json", "status"}, "", "", "usage: service needs install, uninstall or status"},
		{"unknown", []string{"restart"}, "", "", `usage: service needs install, uninstall or status, not "restart"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			action, rest, err := verbAction("service", tc.args, "install", "uninstall", "status")
			if tc.err != "" {
				if !errors.Is(err, errUsage) || err.Error() != tc.err {
					t.Fatalf("error %v, want %q (a usage error)", err, tc.err)
				}
				return
			}
			if err != nil || action != tc.action || strings.Join(rest, " ") != tc.rest {
				t.Fatalf("got %q %q %v, want %q %q", action, rest, err, tc.action, tc.rest)
			}
		})
	}
}
