//go:build unix

package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
	"github.com/crosschat/crosschat-relay/internal/testkit"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// transcriptPath is the bound session's transcript of a sessionEnv.
func transcriptPath(turns session.Turns) string {
	return filepath.Join(turns.Sessions.ClaudeProjects(), "-work", sessionID+".jsonl")
}

// Ensures a turn whose worker stops mid-turn (the relay shuts down) is
// never sent again: the answer the transcript holds after the request is
// reported, labelled as interrupted by a restart; without one the task is
// blocked as not re-sent, for the operator to requeue. A CLI that outlasts
// Stop's deadline (slow: it ignores SIGTERM and the kill grace is longer)
// gets the same: Stop settles its turn from the transcript itself and
// never puts it back in the queue.
func TestSessionTurnStoppedMidTurn(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		slow       bool
		status     relay.TaskStatus
		has        []string // in the result (completed) or message (blocked)
	}{
		{name: "answer in the transcript", mode: "sessionhang", status: relay.StatusCompleted,
			has: []string{worker.RecoveredLabel + ": the run was interrupted by a restart", sessionAnswered, "crosschat-req-"}},
		{name: "no answer yet", mode: "sessionhangearly", status: relay.StatusBlocked,
			has: []string{worker.InterruptedNotResent, "requeue"}},
		{name: "slow stop, answer in the transcript", mode: "sessionstuck", slow: true, status: relay.StatusCompleted,
			has: []string{worker.RecoveredLabel + ": the run was interrupted by a restart", sessionAnswered, "crosschat-req-"}},
		{name: "slow stop, no answer yet", mode: "sessionstuckearly", slow: true, status: relay.StatusBlocked,
			has: []string{worker.InterruptedNotResent, "requeue"}},
		{name: "the CLI's own error in the transcript", mode: "sessionnologinhang", status: relay.StatusBlocked,
			has: []string{"failed without answering this task: " + notLoggedIn}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, turns := sessionEnv(t, time.Hour, func(_ *relay.WorkerConfig, o *worker.Options) {
				if tc.slow {
					o.KillGrace = 3 * time.Second
				}
			})
			m := e.start()
			task := e.post(operator, "Check the lexer", tc.mode)
			// The session's two earlier lines, the request and, unless the
			// mode stops before it, the answer or the CLI's error.
			lines := 4
			if strings.HasSuffix(tc.mode, "early") {
				lines = 3
			}
			poll.Until(t, "the turn in the transcript", 30*time.Second, func() bool {
				b, _ := os.ReadFile(transcriptPath(turns))
				return strings.Contains(string(b), "MODE:"+tc.mode) && strings.Count(string(b), "\n") >= lines
			})
			rs, ok, err := e.db.RunSession(e.ctx, task.ID)
			if err != nil || !ok || rs.SessionID != sessionID || !strings.HasPrefix(rs.RequestToken, "crosschat-req-") || rs.ClaimedAt != e.task(task.ID).ClaimedAt {
				t.Fatalf("the run recorded %+v (%v %v) before the CLI started; want the session, its request token and the claim", rs, ok, err)
			}
			stop := 30 * time.Second
			if tc.slow {
				stop = 200 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), stop)
			defer cancel()
			if err := m.Stop(ctx); (err != nil) != tc.slow {
				t.Fatalf("Stop: %v (the run outlasts the deadline: %v)", err, tc.slow)
			}
			if tc.slow {
				// Settled before Stop returned; the run ends once the kill
				// grace is over, and its end changes nothing.
				if got := e.task(task.ID); got.Status != tc.status {
					t.Fatalf("after the stop deadline the task is %s, want %s", got.Status, tc.status)
				}
				waitFor(t, "the run to end", 30*time.Second, func() bool {
					st, ok := m.Status(builder)
					return ok && st.CurrentTask == nil
				})
			}
			got := e.task(task.ID)
			r := lastReport(got)
			text := r.Result
			if tc.status == relay.StatusBlocked {
				text = r.Message
			}
			if got.Status != tc.status {
				t.Fatalf("status %s (%q), want %s", got.Status, r.Message, tc.status)
			}
			for _, s := range tc.has {
				if !strings.Contains(text, s) {
					t.Errorf("%q lacks %q", text, s)
				}
			}
			if rs, _, _ := e.db.RunSession(e.ctx, task.ID); rs.RequestToken != "" {
				t.Errorf("the request token is still recorded after the run: %+v", rs)
			}
			e.harness.mu.Lock()
			defer e.harness.mu.Unlock()
			if n := len(e.harness.requests); n != 2 { // Build is called twice per run
				t.Errorf("the CLI was built %d times, want one run", n)
			}
		})
	}
}

// Ensures a relay that crashed mid-turn (its run left claimed, with the
// turn's request token recorded) settles the task on its next start from
// the session's transcript, and never re-sends it: the answer after the
// request is reported as recovered, no answer blocks the task as not
// re-sent, and a token another claim recorded is not this one's (the task
// goes back to the queue as for any run).
func TestRecoverSettlesInterruptedTurn(t *testing.T) {
	const token = "crosschat-req-00000000000000c1"
	for _, tc := range []struct {
		name       string
		transcript []map[string]any
		otherClaim bool
		planted    bool // the transcript is stamped an hour before the claim
		status     relay.TaskStatus
		has        string
		logged     string // the outcome in the relay's log
	}{
		{name: "planted before the claim", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeLine("assistant", "Lexer checked.\n"+token)},
			planted: true, status: relay.StatusBlocked, has: worker.InterruptedNotResent, logged: "interrupted"},
		{name: "answered", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeLine("assistant", "Lexer checked.\n"+token)},
			status: relay.StatusCompleted, has: worker.RecoveredLabel + ": the run was interrupted by a restart", logged: "recovered"},
		{name: "not answered", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token)},
			status: relay.StatusBlocked, has: worker.InterruptedNotResent, logged: "interrupted"},
		{name: "the session moved on", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeLine("assistant", "Lexer half checked."),
			claudeLine("user", "Something else, from the person."), claudeLine("assistant", "LATER-ANSWER for another prompt.")},
			status: relay.StatusBlocked, has: "the session moved on", logged: "interrupted"},
		{name: "the CLI's own error", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeError(notLoggedIn, "authentication_failed")},
			status: relay.StatusBlocked, has: "failed without answering this task: " + notLoggedIn, logged: "blocked"},
		{name: "an earlier claim's token", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeLine("assistant", "Lexer checked.\n"+token)},
			otherClaim: true, status: relay.StatusQueued, has: "restarted", logged: "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log testkit.Buffer
			e, turns := sessionEnv(t, time.Hour, func(_ *relay.WorkerConfig, o *worker.Options) {
				o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			task := e.post(operator, "Check the lexer", "session")
			claimed, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: builder, LeaseSeconds: 600, Via: relay.ViaWorker})
			if err != nil || claimed == nil || claimed.ID != task.ID {
				t.Fatalf("claim: %+v %v", claimed, err)
			}
			// The turn, written after its claim (records stamped earlier
			// are ignored: see "planted before the claim").
			at := time.Now()
			if tc.planted {
				at = at.Add(-time.Hour)
			}
			if err := appendTranscript(transcriptPath(turns), at, tc.transcript...); err != nil {
				t.Fatal(err)
			}
			rs := relay.RunSession{TaskID: task.ID, Harness: relay.SessionClaudeCode, SessionID: sessionID, Workdir: "/work",
				RequestToken: token, ClaimedAt: claimed.ClaimedAt}
			if tc.otherClaim {
				rs.ClaimedAt = "2026-01-01T00:00:00.000Z"
			}
			if err := e.db.SaveRunSession(e.ctx, rs); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(e.opts.RunRoot, task.ID), 0o700); err != nil {
				t.Fatal(err)
			}
			// The new relay must not run the task again before we look.
			cfg := e.cfg
			cfg.Enabled = false
			if _, err := e.db.SaveWorker(e.ctx, cfg); err != nil {
				t.Fatal(err)
			}
			e.start()
			got := e.task(task.ID)
			r := lastReport(got)
			if got.Status != tc.status || !strings.Contains(r.Message+"\n"+r.Result, tc.has) {
				t.Fatalf("task %s, report %q / %q; want %s with %q", got.Status, r.Message, r.Result, tc.status, tc.has)
			}
			if tc.status == relay.StatusCompleted && !strings.Contains(r.Result, "Lexer checked.") {
				t.Errorf("result %q lacks the recovered answer", r.Result)
			}
			if want := fmt.Sprintf(`msg="worker run %s" agent=%s task=%s`, tc.logged, builder, task.ID); !strings.Contains(log.String(), want) {
				t.Errorf("the log lacks %s:\n%s", want, log.String())
			}
			if tc.status == relay.StatusBlocked && strings.Contains(r.Message, "Recovered") {
				t.Errorf("blocked with %q, labelled recovered", r.Message)
			}
			if strings.Contains(r.Message+r.Result, "LATER-ANSWER") {
				t.Errorf("report %q / %q holds what the session wrote for a later prompt", r.Message, r.Result)
			}
			e.harness.mu.Lock()
			defer e.harness.mu.Unlock()
			if len(e.harness.requests) != 0 {
				t.Errorf("the CLI was started again")
			}
		})
	}
}
