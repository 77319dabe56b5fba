//go:build unix

package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensure a CLI that outlasts the stop deadline (its tree ignores SIGTERM
// and the kill grace outlasts the deadline) does not leave its task claimed: Stop puts
// the task back in the queue itself before it returns, while the store is
// still open.
func TestRunOutlastingStopDeadlineIsReleased(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "cli.pid")
	script := filepath.Join(dir, "stubborn.sh")
	// The trap is set before the pid file exists: once the test sees the
	// file, SIGTERM cannot end the run.
	body := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\ntrap '' TERM\necho $$ > '%s.tmp'\nmv '%s.tmp' '%s'\nsleep 120\n", pidFile, pidFile, pidFile)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
		c.Command, c.Args = script, nil
		o.KillGrace = 3 * time.Second
	})
	m, err := worker.NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	task := e.post(operator, "Sleep", "sleep")
	waitFor(t, "the CLI's pid file", 30*time.Second, func() bool {
		_, err := os.Stat(pidFile)
		return err == nil
	})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	if got := e.task(task.ID); got.Status != relay.StatusClaimed {
		t.Fatalf("task %s before stop", got.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := m.Stop(ctx); err == nil {
		t.Fatal("Stop returned nil although the run outlasted its deadline")
	}
	if got := e.task(task.ID); got.Status != relay.StatusQueued {
		t.Fatalf("after the stop deadline the task is %s, want queued", got.Status)
	}
	// The run ends once the kill grace is over; let it finish before the
	// store closes.
	waitFor(t, "the run to end", 30*time.Second, func() bool {
		st, ok := m.Status(builder)
		return ok && st.CurrentTask == nil
	})
}
