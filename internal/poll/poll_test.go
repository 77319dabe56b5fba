package poll_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
)

// recorder is a testing.TB that records a failure instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.failed = args[0].(string) }

// Ensures Until returns once the condition holds, and fails with what and
// the detail when it never does.
func TestUntil(t *testing.T) {
	var n atomic.Int32
	r := &recorder{TB: t}
	poll.Until(r, "the third poll", time.Minute, func() bool { return n.Add(1) >= 3 })
	if r.failed != "" || n.Load() != 3 {
		t.Fatalf("failed %q after %d polls", r.failed, n.Load())
	}
	r = &recorder{TB: t}
	details := 0
	poll.Until(r, "never", 0, func() bool { return r.failed != "" }, func() string { details++; return "last: nothing" })
	if !strings.Contains(r.failed, "timed out waiting for never\nlast: nothing") || details != 1 {
		t.Fatalf("failure %q, detail ran %d times", r.failed, details)
	}
}
