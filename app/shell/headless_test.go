//go:build !dev && !production && !bindings

package shell

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// A build without a window, run as the app, says so and how to serve
// instead; a mistyped flag is said as such (it read as the missing window),
// in the words the verbs use for theirs.
func TestHeadlessBuildRunAsTheApp(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flag", nil, noWindowText},
		{"the app's own flag", []string{"--hidden"}, noWindowText},
		{"an unknown flag", []string{"--bogus"}, "crosschat-relay: unknown flag --bogus\ncrosschat-relay --help lists every verb.\n"},
		{"a bad value", []string{"--port", "abc"}, "crosschat-relay: --port \"abc\" is not a whole number\ncrosschat-relay --help lists every verb.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CROSSCHAT_DATA_DIR", t.TempDir())
			var errb testkit.Buffer
			if code := Desktop(tc.args, DesktopOptions{Version: "test"}, &errb); code != 2 || errb.String() != tc.want {
				t.Fatalf("exit %d, %q; want 2, %q", code, errb.String(), tc.want)
			}
			if strings.Contains(errb.String(), "flag provided") {
				t.Fatalf("the flag package's own words: %q", errb.String())
			}
		})
	}
}
