//go:build unix

package cli_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A FIFO planted at the --state path (another user's, in a shared /tmp)
// blocked the read of the cursor for ever, and the monitor with it, saying
// nothing: it is refused at once when the cursor is to be read from it, and
// never read on the stream's path, so a monitor given --after prints its
// tasks (the cursor then replaces the FIFO).
func TestMonitorStateFIFO(t *testing.T) {
	r := startRelay(t)
	projectHome(t)
	rev, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	t.Setenv("CROSSCHAT_TOKEN", rev.Token)
	fifo := filepath.Join(t.TempDir(), "cursor")
	noErr(t, syscall.Mkfifo(fifo, 0o600))

	_, errs, code := run(t, "monitor", "--url", r.Config().BaseURL(), "--state", fifo)
	if code != 1 || !strings.Contains(errs, "--state "+fifo+": not a regular file") {
		t.Fatalf("monitor --state FIFO: exit %d, %q", code, errs)
	}
	m := startMonitor(t, "--url", r.Config().BaseURL(), "--state", fifo, "--after", "0")
	task, err := r.Service().PostTask(t.Context(), relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "bob", Title: "through", Instructions: "x"})
	noErr(t, err)
	m.await(t, task.ID)
	m.stop(t)
}
