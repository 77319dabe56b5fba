//go:build unix

package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensures a process that a sandboxed run of a real worker started in a
// session of its own (setsid: out of the run's process group, deaf to
// SIGTERM) does not outlive the run, whether the CLI ends by itself or the
// worker stops the run, nor does a CLI that itself left the group and
// ignores SIGTERM when the worker stops the run: the worker passes its
// kill grace to the sandbox child, which kills the whole tree before the
// worker's SIGKILL to the group ends the child (with the child's default
// grace, longer than this worker's, that CLI was left to init). The
// sandbox child is this test binary, which links internal/sandbox and so
// runs its hidden verb. Before the sandbox child reaped the run's tree,
// the process lived on for its 2 minutes.
func TestSandboxedRunLeavesNoProcess(t *testing.T) {
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"daemon", "daemonsleep", "setsidcli"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
				c.Sandbox = relay.SandboxOn
				o.Sandbox = sandbox.Wrapper{Self: self}.Wrap
				// Shorter than the sandbox child's default grace, with
				// room for the child's kill before the worker's.
				o.KillGrace = 3 * time.Second
			})
			e.pidFile = filepath.Join(e.workdir, "pids") // where the run may write
			m := e.start()
			task := e.post(operator, "Start a daemon", mode)
			_, daemon := e.pids()
			if mode == "daemon" {
				got := e.finished(task.ID)
				if got.Status != relay.StatusCompleted || !contains(e.activity(task.ID), "Sandboxed (Landlock ABI") {
					t.Fatalf("task %s, %+v", got.Status, lastReport(got))
				}
			} else {
				ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
				defer cancel()
				if err := m.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}
			waitGone(t, daemon)
		})
	}
}

// Ensures a worker whose sandbox is on never runs unconfined in a relay
// without a sandbox (Options.Sandbox nil): the run is not started and the
// task is blocked saying why.
func TestSandboxOnWithoutSandboxRefused(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	e := newEnv(t, func(cfg *relay.WorkerConfig, o *worker.Options) {
		cfg.Sandbox = relay.SandboxOn
		o.Sandbox = nil
		cfg.Env = append(cfg.Env, "CCR_RAN_FILE")
		base := o.Env
		o.Env = func() []string { return append(base(), "CCR_RAN_FILE="+marker) }
	})
	e.start()
	got, r := e.runToEnd(operator, "Run unconfined", "ran")
	if got.Status != relay.StatusBlocked || !strings.Contains(r.Message, "sandbox is on") {
		t.Fatalf("status %s report %+v", got.Status, r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the CLI ran without its sandbox")
	}
}

// Ensures a run past its time limit is stopped, its whole tree killed, and
// reported as a blocker.
func TestTimeout(t *testing.T) {
	e := newEnv(t, func(_ *relay.WorkerConfig, o *worker.Options) { o.MinuteLength = 1500 * time.Millisecond })
	e.start()
	task := e.post(operator, "Sleep", "sleep")
	child, grandchild := e.pids()
	got := e.finished(task.ID)
	if r := lastReport(got); got.Status != relay.StatusBlocked || !strings.Contains(r.Message, "stopped this task after 1 minute without finishing") ||
		!strings.Contains(r.Message, "working") {
		t.Fatalf("status %s message %q", got.Status, r.Message)
	}
	waitGone(t, child, grandchild)
}

// Ensures cancelling the task kills the whole process tree, and the worker
// then shows the run as cancelled, not running.
func TestCancelKillsTree(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	task := e.post(operator, "Sleep", "sleep")
	child, grandchild := e.pids()
	if s := e.status(); s.State != relay.WorkerRunning || s.CurrentTask == nil || s.CurrentTask.ID != task.ID {
		t.Fatalf("status while running = %+v", s)
	}
	// The run folder holds the MCP config with the run token (0600) and the process file.
	runDir := filepath.Join(e.opts.RunRoot, task.ID)
	mcp, err := os.ReadFile(filepath.Join(runDir, "mcp.json"))
	if err != nil || !strings.Contains(string(mcp), `"Bearer ccr_`) || !strings.Contains(string(mcp), `"crosschat-run"`) {
		t.Fatalf("mcp.json = %s, %v", mcp, err)
	}
	if fi, _ := os.Stat(filepath.Join(runDir, "mcp.json")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mcp.json mode %v", fi.Mode())
	}
	proc, _ := os.ReadFile(filepath.Join(e.opts.RunRoot, task.ID+".process"))
	if !strings.HasPrefix(string(proc), strconv.Itoa(child)+"\n"+filepath.Base(e.cfg.Command)) {
		t.Fatalf("process file = %q (child %d)", proc, child)
	}
	req, _ := e.harness.lastRequest(t)
	for _, a := range append([]string{req.Config.Command}, req.Config.Args...) {
		if strings.Contains(a, "ccr_") {
			t.Fatalf("run token in argv: %q", a)
		}
	}
	if _, err := e.db.CancelTask(e.ctx, operator, task.ID, "Not needed."); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child, grandchild)
	poll.Until(t, "the worker to leave running", 15*time.Second, func() bool {
		s := e.status()
		return s.State != relay.WorkerRunning && s.CurrentTask == nil && s.LastRun != nil
	})
	s := e.status()
	if s.LastRun.Outcome != "cancelled" || s.LastRun.TaskID != task.ID {
		t.Fatalf("lastRun = %+v", s.LastRun)
	}
	if got := e.task(task.ID); got.Status != relay.StatusCancelled || len(got.Reports) != 1 {
		t.Fatalf("task %s with %d reports, want cancelled with only the cancel note", got.Status, len(got.Reports))
	}
	a := e.activity(task.ID)
	if end := a[len(a)-1]; end.Kind != relay.StepEnd || end.Text != "Stopped: the task was cancelled." {
		t.Fatalf("end = %+v", end)
	}
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Fatalf("run folder still there: %v", err)
	}
}

// Ensures tasks from senders the worker does not take stay queued.
func TestSendersNotAllowed(t *testing.T) {
	e := newEnv(t, nil)
	e.start()
	other := e.post(stranger, "From a stranger", "done")
	mine := e.post(operator, "From the operator", "done")
	if got := e.finished(mine.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("allowed task: %s", got.Status)
	}
	holds(t, "the stranger's task queued", 2*e.opts.Poll, func() bool { return e.task(other.ID).Status == relay.StatusQueued })
}

// Ensures the runs-per-hour limit holds tasks and shows when it resumes.
func TestRunsPerHour(t *testing.T) {
	e := newEnv(t, func(c *relay.WorkerConfig, _ *worker.Options) { c.RunsPerHour = 1 })
	e.start()
	first := e.post(operator, "First", "done")
	e.finished(first.ID)
	second := e.post(operator, "Second", "done")
	poll.Until(t, "limited", 10*time.Second, func() bool { return e.status().State == relay.WorkerLimited })
	s := e.status()
	at, err := relay.ParseTime(s.ResumesAt)
	if err != nil {
		t.Fatalf("resumesAt %q: %v", s.ResumesAt, err)
	}
	if d := time.Until(at); d < 55*time.Minute || d > 61*time.Minute {
		t.Fatalf("resumes in %v, want about an hour", d)
	}
	holds(t, "the second task queued", 2*e.opts.Poll, func() bool { return e.task(second.ID).Status == relay.StatusQueued })
}

// Ensures pausing stops claims and resuming takes the queued task.
func TestPauseResume(t *testing.T) {
	e := newEnv(t, nil)
	m := e.start()
	m.SetPaused(true)
	poll.Until(t, "paused", 5*time.Second, func() bool { return e.status().State == relay.WorkerPaused })
	task := e.post(operator, "Later", "done")
	holds(t, "the task queued while paused", 2*e.opts.Poll, func() bool { return e.task(task.ID).Status == relay.StatusQueued })
	m.SetPaused(false)
	if got := e.finished(task.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("status %s", got.Status)
	}
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	var sawPaused bool
	for _, s := range e.statuses {
		sawPaused = sawPaused || s.State == relay.WorkerPaused
	}
	if !sawPaused {
		t.Fatal("no paused status was published")
	}
}
