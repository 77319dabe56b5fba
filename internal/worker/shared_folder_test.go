//go:build unix

package worker_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensure what one run plants in a folder another worker's run also
// writes is undone for good when their runs overlap: the first run plants
// a hook, the second starts while it is there, the first ends (its hook
// undone) and then the second. Before, the second run's snapshot held the
// first run's hook as the folder's own, so undoing the second run put the
// hook back, and it stayed for the user's next checkout.
func TestOverlappingRunsKeepNothingPlanted(t *testing.T) {
	e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
		c.Sandbox = relay.SandboxOn
		o.Sandbox = new(fakeSandbox).wrap
	})
	hook := filepath.Join(e.workdir, ".git", "hooks", "post-checkout")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workdir, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := e.cfg
	other.AgentSlug = stranger
	if _, err := e.db.SaveWorker(e.ctx, other); err != nil {
		t.Fatal(err)
	}
	e.start()
	first := e.post(operator, "plant", "plantwait")
	waitFor(t, "the first run's hook", 30*time.Second, func() bool { _, err := os.Lstat(hook); return err == nil })
	second, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: operator, RecipientSlug: stranger,
		Title: "overlap", Instructions: "Please do it. MODE:waitgone"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first.ID, second.ID} {
		waitFor(t, "both runs to end", time.Minute, func() bool {
			s := e.task(id).Status
			return s != relay.StatusQueued && s != relay.StatusClaimed
		})
	}
	waitFor(t, "both workers idle", 30*time.Second, func() bool {
		for _, slug := range []string{builder, stranger} {
			if s, ok := e.mgr.Status(slug); !ok || s.CurrentTask != nil || s.LastRun == nil {
				return false
			}
		}
		return true
	})
	if _, err := os.Lstat(hook); err == nil {
		t.Errorf("the first run's hook is back after the second run (first: %s, second: %s)",
			lastReport(e.task(first.ID)).Message, lastReport(e.task(second.ID)).Message)
	}
}
