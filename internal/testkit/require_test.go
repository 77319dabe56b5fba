package testkit_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensures SkipWithout skips without its variable and fails with it, in a
// child test process so the failure can be seen.
func TestSkipWithout(t *testing.T) {
	if os.Getenv("TESTKIT_CHILD") != "" {
		testkit.SkipWithout(t, "TESTKIT_REQUIRE", "no such thing here")
		return
	}
	for _, tt := range []struct {
		require  string
		wantFail bool
		wantText string
	}{
		{"", false, "SKIP: TestSkipWithout"},
		{"1", true, "TESTKIT_REQUIRE is set"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSkipWithout$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTKIT_CHILD=1", "TESTKIT_REQUIRE="+tt.require)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tt.wantFail {
			t.Errorf("require=%q: failed %v, want %v:\n%s", tt.require, failed, tt.wantFail, out)
		}
		if !strings.Contains(string(out), tt.wantText) {
			t.Errorf("require=%q: output lacks %q:\n%s", tt.require, tt.wantText, out)
		}
	}
}
