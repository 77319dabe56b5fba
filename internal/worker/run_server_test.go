//go:build unix

package worker_test

import (
	"regexp"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Ensure each run names its own MCP server with a fresh random suffix, the
// same for the harness (the command and the prompt) and the sandbox (the
// settings copy it makes): a working folder's .gemini/settings.json outranks
// the CLI home's, and an entry there under a name known before the run
// replaced the run's server and was sent the run's token.
func TestEachRunNamesItsServer(t *testing.T) {
	var box fakeSandbox
	e := newEnv(t, func(c *relay.WorkerConfig, o *worker.Options) {
		c.Sandbox = relay.SandboxOn
		o.Sandbox = box.wrap
	})
	e.start()
	for _, title := range []string{"first", "second"} {
		if task, _ := e.runToEnd(operator, title, "done"); task.Status != relay.StatusCompleted {
			t.Fatalf("%s: task %s", title, task.Status)
		}
	}
	boxed := box.requests()
	e.harness.mu.Lock()
	defer e.harness.mu.Unlock()
	if len(boxed) != 2 {
		t.Fatalf("%d sandbox requests, want 2", len(boxed))
	}
	name := regexp.MustCompile(`^` + regexp.QuoteMeta(runspec.RunServer) + `-[0-9a-f]{12}$`)
	for i, b := range boxed {
		if !name.MatchString(b.Server) {
			t.Errorf("run %d: the sandbox was given server %q", i, b.Server)
		}
	}
	if boxed[0].Server == boxed[1].Server {
		t.Errorf("two runs share the server name %q", boxed[0].Server)
	}
	for _, req := range e.harness.requests {
		if req.Server != boxed[0].Server && req.Server != boxed[1].Server {
			t.Errorf("the harness was asked for server %q; the runs' are %q and %q", req.Server, boxed[0].Server, boxed[1].Server)
		}
	}
	if len(e.harness.requests) == 0 {
		t.Fatal("the harness was asked nothing")
	}
}
