//go:build unix

package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// transcriptPath is the bound session's transcript of a sessionEnv.
func transcriptPath(turns session.Turns) string {
	return filepath.Join(turns.Sessions.ClaudeProjects(), "-work", sessionID+".jsonl")
}

// Ensures a turn whose worker stops mid-turn (the relay shuts down) is
// never sent again: the answer the transcript holds after the request is
// reported, labelled as interrupted by a restart; without one the task is
// blocked as not re-sent, for the operator to requeue.
func TestSessionTurnStoppedMidTurn(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		status     relay.TaskStatus
		has        []string // in the result (completed) or message (blocked)
	}{
		{name: "answer in the transcript", mode: "sessionhang", status: relay.StatusCompleted,
			has: []string{worker.RecoveredLabel + ": the run was interrupted by a restart", sessionAnswered, "crosschat-req-"}},
		{name: "no answer yet", mode: "sessionhangearly", status: relay.StatusBlocked,
			has: []string{worker.InterruptedNotResent, "requeue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, turns := sessionEnv(t, time.Hour, nil)
			m := e.start()
			task := e.post(operator, "Check the lexer", tc.mode)
			poll.Until(t, "the request in the transcript", 30*time.Second, func() bool {
				b, _ := os.ReadFile(transcriptPath(turns))
				return strings.Contains(string(b), "MODE:"+tc.mode)
			})
			rs, ok, err := e.db.RunSession(e.ctx, task.ID)
			if err != nil || !ok || rs.SessionID != sessionID || !strings.HasPrefix(rs.RequestToken, "crosschat-req-") || rs.ClaimedAt != e.task(task.ID).ClaimedAt {
				t.Fatalf("the run recorded %+v (%v %v) before the CLI started; want the session, its request token and the claim", rs, ok, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := m.Stop(ctx); err != nil {
				t.Fatal(err)
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
		status     relay.TaskStatus
		has        string
	}{
		{name: "answered", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeLine("assistant", "Lexer checked.\n"+token)},
			status: relay.StatusCompleted, has: worker.RecoveredLabel + ": the run was interrupted by a restart"},
		{name: "not answered", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token)},
			status: relay.StatusBlocked, has: worker.InterruptedNotResent},
		{name: "an earlier claim's token", transcript: []map[string]any{claudeLine("user", "Check the lexer. "+token), claudeLine("assistant", "Lexer checked.\n"+token)},
			otherClaim: true, status: relay.StatusQueued, has: "restarted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, turns := sessionEnv(t, time.Hour, nil)
			if err := appendTranscript(transcriptPath(turns), time.Now(), tc.transcript...); err != nil {
				t.Fatal(err)
			}
			task := e.post(operator, "Check the lexer", "session")
			claimed, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: builder, LeaseSeconds: 600, Via: relay.ViaWorker})
			if err != nil || claimed == nil || claimed.ID != task.ID {
				t.Fatalf("claim: %+v %v", claimed, err)
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
			e.harness.mu.Lock()
			defer e.harness.mu.Unlock()
			if len(e.harness.requests) != 0 {
				t.Errorf("the CLI was started again")
			}
		})
	}
}

// Ensures an any-session worker delivers a task into the session it names
// (by exact name or id) when the session ran in the worker's folders,
// refuses one that ran elsewhere, and runs a task that names none fresh.
func TestAnySessionWorker(t *testing.T) {
	const elsewhere = "5e55a0b1-0000-4000-8000-000000000002"
	setup := func(t *testing.T) *env {
		e, _ := sessionEnv(t, time.Hour, func(c *relay.WorkerConfig, o *worker.Options) {
			c.Session, c.SessionID, c.SessionLabel, c.AnySession = "", "", "", true
			turns := o.Sessions.(session.Turns)
			path := transcriptPath(turns)
			mine := func(role, text, cwd, id string) map[string]any {
				l := claudeLine(role, text)
				l["cwd"], l["sessionId"] = cwd, id
				return l
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(-time.Hour)
			if err := appendTranscript(path, at, mine("user", "Fix the lexer.", c.Workdir, sessionID), mine("assistant", earlierAnswer, c.Workdir, sessionID),
				map[string]any{"type": "custom-title", "customTitle": "lexer work", "sessionId": sessionID}); err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(turns.Sessions.ClaudeProjects(), "-elsewhere", elsewhere+".jsonl")
			if err := appendTranscript(other, at, mine("user", "Elsewhere.", "/elsewhere", elsewhere),
				map[string]any{"type": "custom-title", "customTitle": "other place", "sessionId": elsewhere}); err != nil {
				t.Fatal(err)
			}
		})
		return e
	}
	for _, tc := range []struct {
		name, target, mode string
		status             relay.TaskStatus
		resumes            string
		has                string
	}{
		{name: "by exact name", target: "lexer work", mode: "session", status: relay.StatusCompleted, resumes: sessionID, has: sessionAnswered},
		{name: "by id", target: sessionID, mode: "session", status: relay.StatusCompleted, resumes: sessionID, has: sessionAnswered},
		{name: "outside the worker's folders", target: "other place", mode: "session", status: relay.StatusBlocked, has: "outside the folders this worker may use"},
		{name: "no such session", target: "lexer", mode: "session", status: relay.StatusBlocked, has: "can't be resumed"},
		{name: "no target runs fresh", target: "", mode: "done", status: relay.StatusCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			e.start()
			task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: operator, RecipientSlug: builder,
				Title: "Check the lexer", Instructions: "Please do it. MODE:" + tc.mode, TargetSession: tc.target})
			if err != nil {
				t.Fatal(err)
			}
			got := e.finished(task.ID)
			r := lastReport(got)
			if got.Status != tc.status || !strings.Contains(r.Message+"\n"+r.Result, tc.has) {
				t.Fatalf("task %s, report %q / %q; want %s with %q", got.Status, r.Message, r.Result, tc.status, tc.has)
			}
			e.harness.mu.Lock()
			defer e.harness.mu.Unlock()
			if tc.status == relay.StatusBlocked {
				if len(e.harness.requests) != 0 {
					t.Errorf("the CLI was started for a session the worker may not resume")
				}
				return
			}
			req := e.harness.requests[len(e.harness.requests)-1]
			if req.ResumeSession != tc.resumes {
				t.Errorf("the run resumes %q, want %q", req.ResumeSession, tc.resumes)
			}
		})
	}
}
