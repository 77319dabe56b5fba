package worker

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensures a recovered answer's label says why recovery was needed, and a
// turn interrupted before any answer is blocked as not re-sent.
func TestRecoveredLabelSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		ex   execResult
		want string // the label, "" when nothing is recovered
	}{
		{"timed out", execResult{timedOut: true, exitCode: -1}, "[Recovered from the session's transcript: the CLI timed out after 5 minutes before it printed its answer.]"},
		{"exited with a code", execResult{exitCode: 3}, "[Recovered from the session's transcript: the CLI exited with code 3 before it printed its answer.]"},
		{"killed", execResult{exitCode: -1}, "[Recovered from the session's transcript: the CLI was killed before it printed its answer.]"},
		{"no answer", execResult{}, "[Recovered from the session's transcript: the CLI ended without printing an answer.]"},
		{"interrupted by a restart", execResult{stopped: true, exitCode: -1}, "[Recovered from the session's transcript: the run was interrupted by a restart of the relay or its worker before the CLI printed its answer.]"},
		{"answered", execResult{answer: "Done."}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := recoverWhy(&tc.ex, 5)
			if tc.want == "" {
				if why != "" {
					t.Fatalf("recoverWhy = %q for an answered turn", why)
				}
				return
			}
			turn := &sessionTurn{info: sessionInfo{ID: "s1"}, token: "crosschat-req-1", why: why}
			out := turn.label(outcome{kind: relay.ReportCompleted, message: "Done.", result: "Done. crosschat-req-1"}, execResult{recovered: true})
			if !strings.HasPrefix(out.result, tc.want+"\n\n") || !strings.HasPrefix(out.message, "Recovered: ") {
				t.Fatalf("result %q, message %q; want the label %q", out.result, out.message, tc.want)
			}
		})
	}
	blocked := (&sessionTurn{info: sessionInfo{ID: "s1", Label: "release prep"}, notResent: true}).label(outcome{kind: relay.ReportBlocked, message: "x"}, execResult{})
	if blocked.kind != relay.ReportBlocked || !strings.HasPrefix(blocked.message, InterruptedNotResent+": ") || !strings.Contains(blocked.message, "“release prep” (s1)") {
		t.Fatalf("not re-sent: %+v", blocked)
	}
}
