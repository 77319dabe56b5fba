package testkit

import (
	"os"
	"testing"
)

// RequireLandlock is the environment variable that turns a missing Landlock
// from a skip into a failure. CI sets it: its machines have Landlock, so a
// sandbox test that skipped there would hide that the sandbox went untested.
const RequireLandlock = "CROSSCHAT_REQUIRE_LANDLOCK"

// SkipWithout skips t because this machine lacks what why names, unless
// the environment variable env is set: then the lack fails t instead.
func SkipWithout(t testing.TB, env, why string) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Fatalf("%s, and %s is set: the machine was expected to have it", why, env)
	}
	t.Skip(why)
}
