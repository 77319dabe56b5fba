//go:build unix

package worker_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
	"github.com/crosschat/crosschat-relay/internal/testkit"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// The bound session of the session worker tests: a Claude Code transcript
// under the test's home folder, which the fake CLI appends to like the real
// one (CCR_TRANSCRIPT names it).
const (
	sessionID       = "5e55a0b1-0000-4000-8000-000000000001"
	earlierAnswer   = "EARLIER-ANSWER: the parser is fixed."
	transcriptEnv   = "CCR_TRANSCRIPT"
	sessionAnswered = "Answered in the session."
	// notLoggedIn is what Claude Code answers, and writes to its
	// transcript, when it is not logged in.
	notLoggedIn = "Not logged in · Please run /login"
)

var requestTokenPattern = regexp.MustCompile(`crosschat-req-[0-9a-f]+`)

// sessionHelper is the fake CLI's session modes: it appends the prompt and
// an answer to the transcript, then prints the answer (session), prints it
// without the request token (sessionmute), is killed before printing
// anything (sessiondie), or hangs until it is stopped, with the answer in
// the transcript (sessionhang) or only the request (sessionhangearly);
// sessionstuck and sessionstuckearly hang the same way but ignore SIGTERM,
// so that only the kill grace's SIGKILL ends them.
func sessionHelper(mode string, prompt []byte) int {
	if m, ok := strings.CutPrefix(mode, "sessionstuck"); ok {
		signal.Ignore(syscall.SIGTERM)
		mode = "sessionhang" + m
	}
	path := os.Getenv(transcriptEnv)
	token := requestTokenPattern.FindString(string(prompt))
	answer := sessionAnswered + "\n" + token
	if mode == "sessionmute" {
		answer = sessionAnswered
	}
	now := time.Now().UTC()
	records := []map[string]any{claudeLine("user", string(prompt)), claudeLine("assistant", answer)}
	switch mode {
	case "sessionhangearly":
		records = records[:1] // the request, no answer yet
	case "sessionnologin", "sessionnologinstream", "sessionnologinhang":
		records[1] = claudeError(notLoggedIn, "authentication_failed")
	}
	if err := appendTranscript(path, now, records...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "sessionhang" || mode == "sessionhangearly" || mode == "sessionnologinhang" {
		time.Sleep(2 * time.Minute) // until the worker is stopped
	}
	if mode == "sessionnologin" || mode == "sessionnologinstream" {
		// Claude Code prints its error as the result and exits 1; its
		// stream says it failed (the test parser reads failure:…) or not.
		if mode == "sessionnologinstream" {
			fmt.Println("failure:" + notLoggedIn)
		}
		fmt.Println(notLoggedIn)
		return 1
	}
	if mode == "sessiondie" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
	fmt.Println(answer)
	return 0
}

// claudeLine is one Claude Code transcript message (without its time).
func claudeLine(role, text string) map[string]any {
	content := any(text)
	if role == "assistant" {
		content = []any{map[string]any{"type": "text", "text": text}}
	}
	return map[string]any{"type": role, "message": map[string]any{"role": role, "content": content}, "sessionId": sessionID, "cwd": "/work"}
}

// claudeError is the message Claude Code writes to its transcript in the
// model's place for its own error.
func claudeError(text, code string) map[string]any {
	m := claudeLine("assistant", text)
	m["message"].(map[string]any)["model"] = "<synthetic>"
	m["error"], m["isApiErrorMessage"] = code, true
	return m
}

// appendTranscript appends records to a transcript, stamped at.
func appendTranscript(path string, at time.Time, records ...map[string]any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// One write for all the records: a reader polling the transcript sees
	// the request and its answer (or error) together, as a CLI writes a
	// turn's lines before it is stopped.
	var buf []byte
	for _, r := range records {
		r["timestamp"] = at.Format(time.RFC3339Nano)
		b, err := json.Marshal(r)
		if err != nil {
			f.Close()
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sessionEnv is an env whose worker is bound to a Claude Code session last
// active idle ago, with the real internal/session store and turn locks.
func sessionEnv(t *testing.T, idle time.Duration, mutate func(*relay.WorkerConfig, *worker.Options)) (*env, session.Turns) {
	t.Helper()
	dir := t.TempDir()
	turns := session.Turns{Sessions: session.Store{Home: filepath.Join(dir, "home")}, LockDir: filepath.Join(dir, "locks")}
	transcript := filepath.Join(turns.Sessions.ClaudeProjects(), "-work", sessionID+".jsonl")
	if err := appendTranscript(transcript, time.Now().Add(-idle), claudeLine("user", "Fix the parser."), claudeLine("assistant", earlierAnswer)); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
		c.Harness, c.Session, c.SessionID, c.SessionLabel = relay.SessionClaudeCode, sessionID, sessionID, "Fix the parser."
		// The worker alone, without the app's sandbox (the preset has it on
		// by default, which a relay without one refuses).
		c.Sandbox = relay.SandboxOff
		c.Env = append(c.Env, transcriptEnv)
		o.Sessions = turns
		env := o.Env
		o.Env = func() []string { return append(env(), transcriptEnv+"="+transcript) }
		if mutate != nil {
			mutate(c, o)
		}
	})
	return e, turns
}

// Ensures a session worker delivers each task into its session: the CLI
// resumes the bound session, the prompt carries a request token, and the
// answer is paired with it, recovered from the transcript when the CLI is
// killed before it answers (and labelled so), or noted when it lacks the
// token; a session idle for more than a day gets a warning first.
func TestSessionWorkerDelivers(t *testing.T) {
	tests := []struct {
		name, mode string
		idle       time.Duration
		has        []string // in the result
		lacks      []string
		warnings   []string // warning steps
		logged     string   // the outcome in the relay's log; "completed" when empty
	}{
		{name: "answer paired", mode: "session", idle: time.Hour, has: []string{sessionAnswered, "crosschat-req-"}, lacks: []string{worker.RecoveredLabel, "does not carry"}},
		{name: "killed mid-turn", mode: "sessiondie", idle: time.Hour, has: []string{worker.RecoveredLabel + ": the CLI was killed before it printed its answer.]", sessionAnswered, "crosschat-req-"},
			lacks: []string{earlierAnswer}, warnings: []string{"answer was recovered from the transcript"}, logged: "recovered"},
		{name: "token missing", mode: "sessionmute", idle: time.Hour, has: []string{sessionAnswered, "does not carry the request token"},
			warnings: []string{"does not carry this request's token"}},
		{name: "idle for days", mode: "session", idle: 72 * time.Hour, has: []string{sessionAnswered},
			warnings: []string{"was last active 3 days ago"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log testkit.Buffer
			e, turns := sessionEnv(t, tt.idle, func(_ *relay.WorkerConfig, o *worker.Options) {
				o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			e.start()
			task := e.post(operator, "Check the lexer", tt.mode)
			got := e.finished(task.ID)
			r := lastReport(got)
			if got.Status != relay.StatusCompleted {
				t.Fatalf("status = %s (%q), want completed", got.Status, r.Message)
			}
			logged := tt.logged
			if logged == "" {
				logged = "completed"
			}
			want := fmt.Sprintf(`msg="worker run %s" agent=%s task=%s`, logged, builder, task.ID)
			waitFor(t, "the run's outcome in the log", 10*time.Second, func() bool { return strings.Contains(log.String(), want) })
			for _, s := range tt.has {
				if !strings.Contains(r.Result, s) {
					t.Errorf("result %q lacks %q", r.Result, s)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(r.Result, s) {
					t.Errorf("result %q has %q", r.Result, s)
				}
			}
			req, in := e.harness.lastRequest(t)
			if req.ResumeSession != sessionID || in.RequestToken == "" || in.Resumed {
				t.Errorf("request resumes %q with token %q (resumed %v), want the bound session and a token", req.ResumeSession, in.RequestToken, in.Resumed)
			}
			if tok := requestTokenPattern.FindString(r.Result); tok != "" && tok != in.RequestToken {
				t.Errorf("the result carries %s, the request %s", tok, in.RequestToken)
			}
			var warnings []string
			a := e.activity(task.ID)
			for _, s := range a {
				if s.Kind == relay.StepWarning {
					warnings = append(warnings, s.Text)
				}
			}
			if len(warnings) != len(tt.warnings) {
				t.Errorf("warnings %q, want %d", warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if i < len(warnings) && !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q, want %q", i, warnings[i], w)
				}
			}
			if _, err := os.Stat(session.LockPath(turns.LockDir, sessionID)); !os.IsNotExist(err) {
				t.Errorf("the turn lock is still there after the run: %v", err)
			}
		})
	}
}

// Ensures a task for a session whose turn lock another owner holds waits
// for it, with its lease kept alive and the CLI not started, and then runs.
func TestSessionWorkerWaitsForTheTurnLock(t *testing.T) {
	e, turns := sessionEnv(t, time.Hour, nil)
	held, _, err := session.TryAcquire(turns.LockDir, sessionID, "another-turn")
	if err != nil || held == nil {
		t.Fatalf("take the lock: %v", err)
	}
	e.start()
	task := e.post(operator, "Check the lexer", "session")
	var waitingAt int
	poll.Until(t, "a waiting step", 30*time.Second, func() bool {
		for _, s := range e.activity(task.ID) {
			if strings.Contains(s.Text, "Waiting for the session") && s.Status == relay.StepRunning {
				waitingAt = s.Seq
				return true
			}
		}
		return false
	})
	lease := e.task(task.ID).LeaseExpiresAt
	poll.Until(t, "the lease to be renewed while waiting", 30*time.Second, func() bool {
		return e.task(task.ID).LeaseExpiresAt != lease
	})
	e.harness.mu.Lock()
	asked := len(e.harness.requests)
	e.harness.mu.Unlock()
	if st := e.task(task.ID).Status; st != relay.StatusClaimed || asked != 0 {
		t.Fatalf("while the lock is held: task %s, the harness asked %d times; want claimed and not started", st, asked)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	got := e.finished(task.ID)
	if got.Status != relay.StatusCompleted || !strings.Contains(lastReport(got).Result, sessionAnswered) {
		t.Fatalf("after the lock was released: %s %q", got.Status, lastReport(got).Result)
	}
	var freeAt, outputAt int
	for _, s := range e.activity(task.ID) {
		switch {
		case strings.Contains(s.Text, "is free: delivering the task"):
			freeAt = s.Seq
		case s.Kind == relay.StepOutput && outputAt == 0:
			outputAt = s.Seq
		}
	}
	if !(waitingAt < freeAt && freeAt < outputAt) {
		t.Errorf("steps: waiting %d, free %d, first output %d; want that order", waitingAt, freeAt, outputAt)
	}
}

// Ensures a session that stays busy past the worker's time limit sends the
// task back to the queue with the reason, instead of failing it.
func TestSessionWorkerRequeuesWhenTheSessionStaysBusy(t *testing.T) {
	e, turns := sessionEnv(t, time.Hour, func(c *relay.WorkerConfig, o *worker.Options) {
		o.MinuteLength = 300 * time.Millisecond
	})
	held, _, err := session.TryAcquire(turns.LockDir, sessionID, "another-turn")
	if err != nil || held == nil {
		t.Fatalf("take the lock: %v", err)
	}
	defer held.Release()
	e.start()
	task := e.post(operator, "Check the lexer", "session")
	poll.Until(t, "the task to go back to the queue", 30*time.Second, func() bool {
		for _, r := range e.task(task.ID).Reports {
			if strings.Contains(r.Message, "stayed busy with another turn") {
				return true
			}
		}
		return false
	})
	got := e.task(task.ID)
	if got.Status != relay.StatusQueued && got.Status != relay.StatusClaimed {
		t.Fatalf("status = %s, want the task back in the queue (or claimed again)", got.Status)
	}
	e.harness.mu.Lock()
	defer e.harness.mu.Unlock()
	if len(e.harness.requests) != 0 {
		t.Fatalf("the CLI was started %d times while the session was busy", len(e.harness.requests))
	}
}

// Ensures a worker bound to a session that is gone reports a blocker that
// says so.
func TestSessionWorkerSessionGone(t *testing.T) {
	e, _ := sessionEnv(t, time.Hour, func(c *relay.WorkerConfig, o *worker.Options) {
		c.SessionID = "5e55a0b1-0000-4000-8000-00000000dead"
	})
	e.start()
	task := e.post(operator, "Check the lexer", "session")
	got := e.finished(task.ID)
	if r := lastReport(got); got.Status != relay.StatusBlocked || !strings.Contains(r.Message, "is not on this computer any more") {
		t.Fatalf("got %s %q, want blocked naming the missing session", got.Status, r.Message)
	}
}

// Ensures a session worker takes the tasks that name its session (by id or
// name) or none, and leaves a task meant for another session queued.
func TestSessionWorkerTakesOnlyItsSessionsTasks(t *testing.T) {
	e, _ := sessionEnv(t, time.Hour, nil)
	post := func(title, target string) relay.Task {
		task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: operator, RecipientSlug: builder,
			Title: title, Instructions: "Please do it. MODE:session", TargetSession: target})
		if err != nil {
			t.Fatalf("PostTask: %v", err)
		}
		return task
	}
	other := post("For another session", "release prep")
	byName := post("For this session by name", "Fix the parser.")
	byID := post("For this session by id", sessionID)
	anyone := post("For any session", "")
	e.start()
	poll.Until(t, "the three tasks for this session or none to finish", 30*time.Second, func() bool {
		for _, task := range []relay.Task{byName, byID, anyone} {
			if st := e.task(task.ID).Status; st == relay.StatusQueued || st == relay.StatusClaimed {
				return false
			}
		}
		return true
	})
	for _, task := range []relay.Task{byName, byID, anyone} {
		if got := e.task(task.ID); got.Status != relay.StatusCompleted {
			t.Fatalf("%s: %s %q", task.Title, got.Status, lastReport(got).Message)
		}
	}
	if got := e.task(other.ID); got.Status != relay.StatusQueued {
		t.Fatalf("the task for another session is %s, want queued", got.Status)
	}
}

// Ensures a turn that ends in the CLI's own error (Claude Code not logged
// in: it prints the error, writes it to the transcript in the model's place
// and exits 1) is blocked with that cause, never recovered as an answer:
// whether its stream says it failed (no recovery is tried) or only the
// transcript does (recovery finds the error, not an answer).
func TestSessionTurnCLIFailure(t *testing.T) {
	for _, mode := range []string{"sessionnologin", "sessionnologinstream"} {
		t.Run(mode, func(t *testing.T) {
			var log testkit.Buffer
			e, _ := sessionEnv(t, time.Hour, func(_ *relay.WorkerConfig, o *worker.Options) {
				o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			e.start()
			task := e.post(operator, "Check the lexer", mode)
			got := e.finished(task.ID)
			r := lastReport(got)
			want := "Claude-code failed without answering this task: " + notLoggedIn + " (it exited with code 1)"
			if got.Status != relay.StatusBlocked || !strings.HasPrefix(r.Message, want) {
				t.Fatalf("task %s with %q / %q; want blocked with %q", got.Status, r.Message, r.Result, want)
			}
			line := fmt.Sprintf(`msg="worker run blocked" agent=%s task=%s why="%s`, builder, task.ID, want)
			waitFor(t, "the run's outcome in the log", 10*time.Second, func() bool { return strings.Contains(log.String(), line) })
			if strings.Contains(r.Message+r.Result, "Recovered") || strings.Contains(r.Message, "does not carry") {
				t.Errorf("report %q / %q", r.Message, r.Result)
			}
			var steps []string
			for _, s := range e.activity(task.ID) {
				if s.Kind == relay.StepWarning || s.Kind == relay.StepError {
					steps = append(steps, s.Text)
				}
			}
			fromTranscript := mode == "sessionnologin"
			if saw := strings.Contains(strings.Join(steps, "\n"), "shows the CLI's own error"); saw != fromTranscript || strings.Contains(strings.Join(steps, "\n"), "was recovered") {
				t.Errorf("steps %q; want the transcript's error noted: %v, and no recovery", steps, fromTranscript)
			}
		})
	}
}
