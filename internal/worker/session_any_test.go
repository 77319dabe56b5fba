//go:build unix

package worker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensures an any-session worker delivers a task into the session it names
// (by exact name or id) when the session ran in the worker's folders,
// refuses one that ran elsewhere (also through a symbolic link inside its
// folder, which leads to the relay's data folder) without naming the
// folder, and runs a task that names none fresh.
func TestAnySessionWorker(t *testing.T) {
	for _, tc := range []struct {
		name, target, mode string
		status             relay.TaskStatus
		resumes            string
		has                string
	}{
		{name: "by exact name", target: "lexer work", mode: "session", status: relay.StatusCompleted, resumes: sessionID, has: sessionAnswered},
		{name: "by id", target: sessionID, mode: "session", status: relay.StatusCompleted, resumes: sessionID, has: sessionAnswered},
		{name: "outside the worker's folders", target: "other place", mode: "session", status: relay.StatusBlocked, has: "can't be resumed"},
		{name: "through a link inside the worker's folder", target: "pwn", mode: "session", status: relay.StatusBlocked, has: "can't be resumed"},
		{name: "by id through a link", target: linkedSession, mode: "session", status: relay.StatusBlocked, has: "can't be resumed"},
		{name: "no such session", target: "lexer", mode: "session", status: relay.StatusBlocked, has: "can't be resumed"},
		{name: "no target runs fresh", target: "", mode: "done", status: relay.StatusCompleted},
		// The CLI not logged in: its error in the transcript is no answer.
		{name: "the CLI's own error", target: "lexer work", mode: "sessionnologin", status: relay.StatusBlocked, resumes: sessionID,
			has: "failed without answering this task: " + notLoggedIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, data := anySessionEnv(t)
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
			if strings.Contains(r.Message+r.Result, data) || strings.Contains(r.Message+r.Result, "/elsewhere") {
				t.Errorf("the report %q names a folder", r.Message)
			}
			if strings.Contains(r.Message+r.Result, "Recovered") {
				t.Errorf("the report %q / %q is labelled recovered", r.Message, r.Result)
			}
			e.harness.mu.Lock()
			defer e.harness.mu.Unlock()
			if tc.status == relay.StatusBlocked && tc.resumes == "" {
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

// Ensures a task aimed at a live session (one whose channel told the relay
// its id) is left to that session: the any-session worker, which could
// resume it, runs a later task and leaves that one queued.
func TestAnySessionWorkerLeavesLiveSessions(t *testing.T) {
	e, _ := anySessionEnv(t)
	if err := e.db.SeeLiveSession(e.ctx, relay.LiveSession{AgentSlug: builder, ID: sessionID, Name: "lexer work"}); err != nil {
		t.Fatal(err)
	}
	live, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: operator, RecipientSlug: builder,
		Title: "For the open chat", Instructions: "Please do it. MODE:session", TargetSession: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	e.start()
	later := e.post(operator, "Fresh work", "done")
	if got := e.finished(later.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("the later task is %s, want completed", got.Status)
	}
	if got := e.task(live.ID); got.Status != relay.StatusQueued {
		t.Fatalf("the task for the live session is %s, want queued for that session", got.Status)
	}
}

// anySessionEnv is a session env whose worker resumes any session of its
// CLI in its folders: “lexer work” (sessionID) ran in its working folder,
// “other place” elsewhere.
func anySessionEnv(t *testing.T) (*env, string) {
	t.Helper()
	const elsewhere = "5e55a0b1-0000-4000-8000-000000000002"
	data := filepath.Join(t.TempDir(), "relay-data")
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
		// A run could make a link inside its folder to the relay's data
		// folder and a transcript that ran "there".
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(c.Workdir, "x")
		if err := os.Symlink(data, link); err != nil {
			t.Fatal(err)
		}
		pwn := filepath.Join(turns.Sessions.ClaudeProjects(), "-x", linkedSession+".jsonl")
		if err := appendTranscript(pwn, at, mine("user", "Hi.", link, linkedSession),
			map[string]any{"type": "custom-title", "customTitle": "pwn", "sessionId": linkedSession}); err != nil {
			t.Fatal(err)
		}
	})
	return e, data
}

// linkedSession is anySessionEnv's session that "ran" in a link to the
// relay's data folder.
const linkedSession = "5e55a0b1-0000-4000-8000-000000000003"
