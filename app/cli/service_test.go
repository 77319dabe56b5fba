package cli

import (
	"strings"
	"testing"
)

// TestSystemServiceAccount: `service install --system` never installs a
// service that runs the relay (and the agent CLIs of its workers) as SYSTEM
// or root on Windows and macOS: it is refused on Windows, and on macOS runs
// as the named user (--user, else $SUDO_USER, else the current user).
func TestSystemServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name, goos, action, account, sudo, current string
		want, err                                  string
	}{
		{"windows install refused", "windows", "install", "ann", "", "ann", "", "refused on Windows"},
		{"windows uninstall allowed", "windows", "uninstall", "", "", "ann", "ann", ""},
		{"macOS --user", "darwin", "install", "ann", "bob", "root", "ann", ""},
		{"macOS sudo user", "darwin", "install", "", "bob", "root", "bob", ""},
		{"macOS root refused", "darwin", "install", "", "", "root", "", "never root"},
		{"macOS --user root refused", "darwin", "install", "root", "", "ann", "", "never root"},
		{"macOS status as root allowed", "darwin", "status", "", "", "root", "root", ""},
		{"linux unchanged", "linux", "install", "", "", "root", "root", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := systemServiceAccount(tc.goos, tc.action, tc.account, tc.sudo, tc.current)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
