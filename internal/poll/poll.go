// Package poll is the tests' one way to wait for a condition: poll it with
// a deadline instead of sleeping a guessed time. Only tests import it.
package poll

import (
	"testing"
	"time"
)

// Every is how often Until polls.
const Every = 20 * time.Millisecond

// Until polls cond until it holds and fails t when within passes first,
// naming what it waited for and, when given, the detail of the last poll
// (detail runs only on failure).
func Until(t testing.TB, what string, within time.Duration, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			msg := "timed out waiting for " + what
			for _, d := range detail {
				msg += "\n" + d()
			}
			t.Fatal(msg)
		}
		time.Sleep(Every)
	}
}
