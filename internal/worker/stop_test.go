package worker_test

import (
	"context"
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
	e := newEnv(t, func(_ *relay.WorkerConfig, o *worker.Options) { o.KillGrace = 3 * time.Second })
	m, err := worker.NewManager(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	task := e.post(operator, "Sleep", "sleep")
	child, grandchild := e.pids()
	t.Cleanup(func() {
		_ = syscall.Kill(-child, syscall.SIGKILL)
		_ = syscall.Kill(grandchild, syscall.SIGKILL)
	})
	if got := e.task(task.ID); got.Status != relay.StatusClaimed {
		t.Fatalf("task %s before stop", got.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := m.Stop(ctx); err == nil {
		t.Fatal("Stop returned nil although the run outlasted its deadline")
	}
	got := e.task(task.ID)
	if got.Status != relay.StatusQueued || got.Reports[len(got.Reports)-1].Message == "" {
		t.Fatalf("after the stop deadline the task is %s, want queued", got.Status)
	}
	// The run ends once the kill grace is over; let it finish before the
	// store closes.
	waitFor(t, "the run to end", 30*time.Second, func() bool {
		st, ok := m.Status(builder)
		return ok && st.CurrentTask == nil
	})
}
