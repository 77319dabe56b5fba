package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensure a process that a sandboxed run of a real worker started in a
// session of its own (setsid, out of the run's process group, deaf to
// SIGTERM) does not outlive the run, whether the CLI ends by itself or
// the worker stops the run. The sandbox child is this test binary (it
// links internal/sandbox, whose hidden verb it runs). Before the sandbox
// child reaped the run's tree, the process lived on for its 2 minutes.
func TestSandboxedRunLeavesNoProcess(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"daemon", "daemonwait"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
				c.Sandbox = relay.SandboxOn
				o.Sandbox = sandbox.Wrapper{Self: self}.Wrap
			})
			m := e.start()
			pidFile := filepath.Join(e.workdir, "daemon.pid")
			t.Cleanup(func() {
				if pid, ok := readDaemonPid(pidFile); ok && alive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			task := e.post(operator, "Start a daemon", mode)
			poll.Until(t, "the daemon's pid file", 30*time.Second, func() bool {
				_, ok := readDaemonPid(pidFile)
				return ok
			})
			daemon, _ := readDaemonPid(pidFile)
			if mode == "daemonwait" {
				ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
				defer cancel()
				if err := m.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				got := e.finished(task.ID)
				if r := lastReport(got); got.Status != relay.StatusCompleted || !strings.Contains(r.Result, "Started a daemon.") {
					t.Fatalf("task %s: %+v", got.Status, r)
				}
				if !contains(e.activity(task.ID), "Sandboxed (Landlock ABI") {
					t.Fatal("the run log does not say the run was sandboxed")
				}
			}
			waitGone(t, daemon)
		})
	}
}

// readDaemonPid reads the helper daemon's pid file once it is written.
func readDaemonPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}
