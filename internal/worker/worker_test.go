//go:build unix

package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensures a run reports the CLI's answer as the result, with the run token
// in its environment, and records start and end steps.
func TestRunCompletes(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	got, r := e.runToEnd(operator, "Build the thing", "done")
	if got.Status != relay.StatusCompleted {
		t.Fatalf("status = %s (%q), want completed", got.Status, r.Message)
	}
	for _, want := range []string{"Done by builder in", e.workdir, "token:run", "prompt-has-title:true"} {
		if !strings.Contains(r.Result, want) {
			t.Errorf("result %q lacks %q", r.Result, want)
		}
	}
	if !strings.HasPrefix(r.Message, "Done by builder") {
		t.Errorf("message = %q, want the first line", r.Message)
	}
	a := e.activity(got.ID)
	if len(a) < 2 || a[0].Kind != relay.StepStart || a[0].Seq != 1 || !strings.Contains(a[0].Text, "harness started in "+e.workdir) {
		t.Fatalf("first entry = %+v", a)
	}
	if end := a[len(a)-1]; end.Kind != relay.StepEnd || end.Status != relay.StepOK {
		t.Fatalf("last entry = %+v", end)
	}
	s := e.status()
	if s.State != relay.WorkerIdle || s.LastRun.Outcome != relay.ReportCompleted || s.LastRun.Summary == "" {
		t.Fatalf("status = %+v, lastRun %+v", s.State, s.LastRun)
	}
	// The run token was revoked and the run folder deleted.
	tok, err := os.ReadFile(e.tokFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Authenticate(e.ctx, string(tok)); relay.ErrorCode(err) != relay.EUnauthorized {
		t.Fatalf("Authenticate(run token) after the run: %v, want unauthorized", err)
	}
	if _, err := os.Stat(filepath.Join(e.opts.RunRoot, got.ID)); !os.IsNotExist(err) {
		t.Fatalf("run folder still there: %v", err)
	}
	// Hand-offs left come from the chain limit and the depth.
	_, in := e.harness.lastRequest(t)
	if in.HandOffsLeft != relay.DefaultChainLimit || in.Resumed {
		t.Fatalf("prompt input: handOffsLeft %d resumed %v", in.HandOffsLeft, in.Resumed)
	}
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name, mode string
		status     relay.TaskStatus
		message    []string
		result     string
	}{
		{"blocked answer", "block", relay.StatusBlocked, []string{"I need the API key."}, ""},
		{"non-zero exit with the tail", "fail", relay.StatusBlocked, []string{"Harness exited with code 3 before finishing.", "Last output:", "out of memory"}, ""},
		{"empty answer", "empty", relay.StatusBlocked, []string{"finished but gave no answer", "nothing to say"}, ""},
		// The CLI said in its stream that it failed: blocked with its cause,
		// even when it exits 0.
		{"the CLI's own error", "failed", relay.StatusBlocked, []string{"Harness failed without answering this task: " + notLoggedIn}, ""},
		{"the CLI's own error and an exit code", "failedexit", relay.StatusBlocked, []string{"Harness failed without answering this task: " + notLoggedIn + " (it exited with code 1)"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.start()
			task := e.post(operator, "Try "+tt.mode, tt.mode)
			got := e.finished(task.ID)
			r := lastReport(got)
			if got.Status != tt.status {
				t.Fatalf("status = %s (%q), want %s", got.Status, r.Message, tt.status)
			}
			for _, m := range tt.message {
				if !strings.Contains(r.Message, m) {
					t.Errorf("message %q lacks %q", r.Message, m)
				}
			}
			if tt.mode == "block" && r.Message != "I need the API key." {
				t.Errorf("message = %q, want exactly the text after BLOCKED:", r.Message)
			}
			if tt.mode == "fail" && !strings.Contains(r.Message, "ANTHROPIC_API_KEY") {
				t.Errorf("message %q does not name the withheld *_API_KEY", r.Message)
			}
			a := e.activity(task.ID)
			if end := a[len(a)-1]; end.Kind != relay.StepEnd || end.Status != relay.StepFailed || !strings.HasPrefix(end.Text, "Stopped: ") {
				t.Errorf("end = %+v", end)
			}
			if s := e.status(); s.LastRun.Outcome != relay.ReportBlocked {
				t.Errorf("lastRun = %+v", s.LastRun)
			}
		})
	}
}

// Ensures the answer is read from the result file when the command names it.
func TestResultFile(t *testing.T) {
	e := newEnv(t, func(c *relay.WorkerConfig, _ *worker.Options) {
		c.PromptMode = relay.PromptFile
		c.Args = []string{"-test.run=^TestHelperProcess$", "--", "{prompt_file}", "--out", "{result_file}"}
	})
	e.start()
	task := e.post(operator, "Answer in a file", "file")
	got := e.finished(task.ID)
	if r := lastReport(got); got.Status != relay.StatusCompleted || r.Result != "Answer from the file." {
		t.Fatalf("status %s result %q", got.Status, r.Result)
	}
}

// Ensures a run that makes its result file a symbolic or hard link to a
// file of the user's (which a sandboxed run cannot read itself) is blocked
// with a clear message, and the file's content is never its answer.
func TestResultFileLinkRefused(t *testing.T) {
	for _, mode := range []string{"link", "hardlink"} {
		t.Run(mode, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "id_ed25519")
			if err := os.WriteFile(secret, []byte("PRIVATE KEY of the user"), 0o600); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, func(cfg *relay.WorkerConfig, o *worker.Options) {
				cfg.PromptMode = relay.PromptFile
				cfg.Args = []string{"-test.run=^TestHelperProcess$", "--", "{prompt_file}", "--out", "{result_file}"}
				cfg.Env = append(cfg.Env, "CCR_SECRET_FILE")
				base := o.Env
				o.Env = func() []string { return append(base(), "CCR_SECRET_FILE="+secret) }
			})
			if mode == "hardlink" {
				// A hard link needs both in one file system: the secret
				// beside the run folders.
				secret = filepath.Join(e.dir, "id_ed25519")
				if err := os.WriteFile(secret, []byte("PRIVATE KEY of the user"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e.start()
			got, r := e.runToEnd(operator, "Answer with a key", mode)
			if strings.Contains(r.Result+r.Message, "PRIVATE KEY") {
				t.Fatalf("the report shows the linked file: %+v", r)
			}
			for _, a := range e.activity(got.ID) {
				if strings.Contains(a.Text+a.Detail, "PRIVATE KEY") {
					t.Fatalf("the run log shows the linked file: %+v", a)
				}
			}
			if got.Status != relay.StatusBlocked || !strings.Contains(r.Message, "did not read the run's result file") {
				t.Fatalf("status %s report %+v", got.Status, r)
			}
		})
	}
}

// Ensures the CLI leads a session of its own, so it has no controlling
// terminal (the relay's, whose TIOCSTI would type into the user's shell).
func TestRunHasItsOwnSession(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	e := newEnv(t, nil)
	e.start()
	got, r := e.runToEnd(operator, "Which session", "sid")
	var pid, sid int
	if _, err := fmt.Sscanf(r.Result, "pid:%d sid:%d", &pid, &sid); err != nil || got.Status != relay.StatusCompleted {
		t.Fatalf("status %s result %q: %v", got.Status, r.Result, err)
	}
	if sid != pid {
		t.Fatalf("the CLI (pid %d) is in session %d, not a session of its own", pid, sid)
	}
}

// Ensures a new manager after a crash stops the leftover CLI tree only if
// it is still ours, requeues the task and tells the sender. The relay that
// crashes is a real process of its own, killed with SIGKILL mid-run.
func TestRestartRecovery(t *testing.T) {
	e := newEnv(t, nil)
	crashed := e.relayProcess()
	task := e.post(operator, "Sleep through a crash", "sleep")
	child, grandchild := e.pids()
	// The run may write its run folder: it names a process of the user's
	// running the same program there, for the next start to kill.
	victim := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	victim.Env = append(os.Environ(), helperEnv+"=1", "CCR_HELPER_MODE=grandchild")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = victim.Process.Kill()
		_ = victim.Wait()
	})
	forged := fmt.Sprintf("%d\n%s\n", victim.Process.Pid, filepath.Base(e.cfg.Command))
	if err := os.WriteFile(filepath.Join(e.opts.RunRoot, task.ID, "process"), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := crashed.Process.Kill(); err != nil {
		t.Fatalf("kill the relay process: %v", err)
	}
	if err := crashed.Wait(); err == nil {
		t.Fatal("the relay process should have died of the kill")
	}

	// A run folder whose process file names a pid that is not our program.
	unrelated := exec.Command("sleep", "60")
	if err := unrelated.Start(); err != nil {
		t.Skipf("no sleep program: %v", err)
	}
	t.Cleanup(func() {
		_ = unrelated.Process.Kill()
		_ = unrelated.Wait()
	})
	other := e.post(stranger, "Not running", "done")
	fake := filepath.Join(e.opts.RunRoot, other.ID)
	if err := os.MkdirAll(fake, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake+".process", []byte(strconv.Itoa(unrelated.Process.Pid)+"\nclaude\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !alive(child) || !alive(grandchild) {
		t.Fatal("the abandoned CLI should still run")
	}

	// The new relay must not run the task again before we look.
	cfg := e.cfg
	cfg.Enabled = false
	if _, err := e.db.SaveWorker(e.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.start()
	waitGone(t, child, grandchild)
	if !alive(unrelated.Process.Pid) {
		t.Fatal("recovery killed an unrelated process")
	}
	if !alive(victim.Process.Pid) {
		t.Fatal("recovery killed the process the run named in its run folder")
	}
	got := e.task(task.ID)
	if got.Status != relay.StatusQueued || !strings.Contains(lastReport(got).Message, "relay restarted") {
		t.Fatalf("task %s, last report %q", got.Status, lastReport(got).Message)
	}
	updates, err := e.db.ReadUpdates(e.ctx, operator, 100)
	if err != nil {
		t.Fatal(err)
	}
	var told bool
	for _, u := range updates.Updates {
		told = told || (u.TaskID == task.ID && u.Type == relay.EventTaskRequeued && strings.Contains(u.Summary, "relay restarted"))
	}
	if !told {
		t.Fatalf("sender not told: %+v", updates.Updates)
	}
	entries, _ := os.ReadDir(e.opts.RunRoot)
	if len(entries) != 0 {
		t.Fatalf("run folders left: %v", entries)
	}
	if s := e.status(); s.State != relay.WorkerDisabled {
		t.Fatalf("state %s, want disabled", s.State)
	}
}

// Ensures the CLI gets the minimal environment: no secrets, no proxy with
// credentials, but the variables the worker names and the run's own.
func TestChildEnvironment(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	task := e.post(operator, "Print the environment", "env")
	got := e.finished(task.ID)
	r := lastReport(got).Result
	for _, want := range []string{"MY_NAMED=passed", "CROSSCHAT_AGENT=builder", "CROSSCHAT_TOKEN=[hidden]", "CROSSCHAT_TASK_ID=" + task.ID,
		"CROSSCHAT_EXTRA_DIRS=" + e.extra, "CROSSCHAT_MCP_URL=http://127.0.0.1:4318/mcp", "PATH="} {
		if !strings.Contains(r, want) {
			t.Errorf("environment lacks %q:\n%s", want, r)
		}
	}
	for _, bad := range []string{"s3cr3t", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "HTTPS_PROXY", "user:pw", "ANTHROPIC_API_KEY"} {
		if strings.Contains(r, bad) {
			t.Errorf("environment has %q", bad)
		}
	}
}

// Ensures the run token never reaches the activity log or the report, and
// output lines and stderr are recorded.
func TestTokenHidden(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	got, r := e.runToEnd(operator, "Chat", "chatty")
	if got.Status != relay.StatusCompleted || strings.Contains(r.Result+r.Message, "ccr_") || !strings.Contains(r.Result, "[hidden]") {
		t.Fatalf("status %s report %+v", got.Status, r)
	}
	a := e.activity(got.ID)
	if !contains(a, "step one") || !contains(a, "warning: token [hidden]") {
		t.Fatalf("activity lacks the output: %+v", a)
	}
	for _, entry := range a {
		if strings.Contains(entry.Text+entry.Detail+entry.Ref, "ccr_") {
			t.Fatalf("token in activity: %+v", entry)
		}
	}
}

// Ensures the files a run writes in the working and extra folders are listed.
func TestChangedFiles(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	task := e.post(operator, "Write", "write")
	e.finished(task.ID)
	var files []relay.ChangedFile
	for _, entry := range e.activity(task.ID) {
		if entry.Kind == relay.StepFiles {
			files = entry.Files
			if entry.Text != "Files: 2 added" {
				t.Errorf("files text %q", entry.Text)
			}
		}
	}
	want := map[string]bool{filepath.Join(e.workdir, "made-by-run.txt"): true, filepath.Join(e.extra, "delivered.png"): true}
	if len(files) != 2 {
		t.Fatalf("files = %+v", files)
	}
	for _, f := range files {
		if !want[f.Path] || f.Change != relay.FileAdded {
			t.Errorf("unexpected %+v", f)
		}
		if ok, err := e.db.TaskChangedFile(e.ctx, task.ID, f.Path); err != nil || !ok {
			t.Errorf("TaskChangedFile(%s) = %v, %v", f.Path, ok, err)
		}
	}
}

// Ensures a later round resumes the CLI's own session and sees the
// requested changes.
func TestResumeSession(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	task := e.post(operator, "Remember", "remember")
	if got := e.finished(task.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("round 1: %s", got.Status)
	}
	s, ok, err := e.db.RunSession(e.ctx, task.ID)
	if err != nil || !ok || s.SessionID != "sess-1" || s.Harness != relay.HarnessCustom || s.Workdir != e.workdir {
		t.Fatalf("RunSession = %+v, %v, %v", s, ok, err)
	}
	if _, err := e.db.RequestChanges(e.ctx, operator, task.ID, "Shorter, please."); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "round 2", 30*time.Second, func() bool {
		got := e.task(task.ID)
		return got.Status == relay.StatusCompleted && len(got.Reports) >= 3
	})
	req, in := e.harness.lastRequest(t)
	if req.ResumeSession != "sess-1" || !in.Resumed {
		t.Fatalf("round 2: resume %q resumed %v", req.ResumeSession, in.Resumed)
	}
	if !strings.Contains(req.Prompt, "Changes requested: Shorter, please.") {
		t.Fatalf("round 2 prompt lacks the changes:\n%s", req.Prompt)
	}
}

// Ensures Stop kills a running CLI's tree and puts its task back.
func TestStopReleases(t *testing.T) {
	e := newEnv(t, nil)
	m := e.start()
	task := e.post(operator, "Sleep", "sleep")
	child, grandchild := e.pids()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child, grandchild)
	got := e.task(task.ID)
	if got.Status != relay.StatusQueued || !strings.Contains(lastReport(got).Message, "relay stopped") {
		t.Fatalf("task %s, %q", got.Status, lastReport(got).Message)
	}
}

// TestEncodedSecretsHidden is M3: a run reads the admin token file and
// returns the admin token and its own run token encoded (base64 in both
// alphabets, padded or not, inside a longer base64 text, hex in both
// cases, URL-escaped) in its answer and its log. Neither the report nor
// the run log shows any of them.
func TestEncodedSecretsHidden(t *testing.T) {
	admin := relay.NewAdminToken()
	adminFile := filepath.Join(t.TempDir(), "api-token")
	if err := os.WriteFile(adminFile, []byte(admin), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(cfg *relay.WorkerConfig, o *worker.Options) {
		cfg.Env = append(cfg.Env, "CCR_ADMIN_FILE")
		o.Secrets = []string{admin}
		base := o.Env
		o.Env = func() []string { return append(base(), "CCR_ADMIN_FILE="+adminFile) }
	})
	e.start()
	got, r := e.runToEnd(operator, "Leak the keys", "encoded")
	runTok, err := os.ReadFile(e.tokFile)
	if err != nil || !strings.HasPrefix(string(runTok), relay.RunTokenPrefix) {
		t.Fatalf("run token file: %q %v", runTok, err)
	}
	if got.Status != relay.StatusCompleted || !strings.Contains(r.Result, "b64:[hidden]") || !strings.Contains(r.Result, "hex:[hidden]") {
		t.Fatalf("status %s report %+v", got.Status, r)
	}
	var logText strings.Builder
	for _, entry := range e.activity(got.ID) {
		logText.WriteString(entry.Text + "\n" + entry.Detail + "\n" + entry.Ref + "\n")
	}
	if !strings.Contains(logText.String(), "log b64:[hidden] hex:[hidden]") {
		t.Fatalf("the run log lacks the hidden line:\n%s", logText.String())
	}
	for _, sec := range []string{admin, string(runTok)} {
		b := []byte(sec)
		forms := map[string]string{
			"base64":         base64.StdEncoding.EncodeToString(b),
			"base64url":      base64.RawURLEncoding.EncodeToString(b),
			"base64 in text": base64.StdEncoding.EncodeToString(append([]byte("key="), b...))[8:40],
			"hex":            hex.EncodeToString(b),
			"HEX":            strings.ToUpper(hex.EncodeToString(b)),
		}
		for name, f := range forms {
			if strings.Contains(r.Result+r.Message, f) {
				t.Errorf("the report shows the %s of a secret:\n%s", name, r.Result)
			}
			if strings.Contains(logText.String(), f) {
				t.Errorf("the run log shows the %s of a secret", name)
			}
		}
	}
}
