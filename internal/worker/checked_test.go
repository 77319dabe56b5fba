//go:build unix

package worker_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensure a sandboxed run is given its folders and allowed paths as the
// worker checked them against their pins, and the sandbox is told so
// (SandboxRequest.Resolved), so it follows no link in them again: an
// allowed path that is a link reaches the sandbox as where it led at the
// check, with the working and extra folders as they resolved. Before, the
// sandbox got the allowed paths as configured and resolved them itself
// after the check, following a link put there in between.
func TestRunGetsCheckedPaths(t *testing.T) {
	var box fakeSandbox
	var real, link string
	e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
		base := filepath.Dir(c.Workdir)
		real, link = filepath.Join(base, "cache-real"), filepath.Join(base, "cache")
		if err := os.MkdirAll(real, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		c.Sandbox, c.AllowPaths = relay.SandboxOn, []string{link + ":rw"}
		o.Sandbox = box.wrap
	})
	e.start()
	task, _ := e.runToEnd(operator, "checked", "done")
	if task.Status != relay.StatusCompleted {
		t.Fatalf("task %s", task.Status)
	}
	got := box.requests()
	if len(got) != 1 {
		t.Fatalf("%d sandbox requests", len(got))
	}
	realReal, _ := filepath.EvalSymlinks(real)
	req := got[0]
	if req.Resolved == nil || req.Resolved[link] != realReal {
		t.Errorf("the allowed path reached the sandbox unchecked: Resolved %v, want %s → %s", req.Resolved, link, realReal)
	}
	if w, _ := filepath.EvalSymlinks(e.workdir); req.Workdir != w {
		t.Errorf("working folder %s, want %s as it resolved", req.Workdir, w)
	}
}
