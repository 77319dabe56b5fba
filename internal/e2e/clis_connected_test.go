package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/e2e"
	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// TestRealCLIsUseOnlyTheRunsServer runs each real agent CLI as a sandboxed
// worker of an agent the user also connected in one step (harness.Connect,
// as the Connect page does: the agent's token in the user's own
// ~/.claude.json, ~/.codex/config.toml or ~/.gemini/settings.json). The
// run loads only its own relay server: the model is offered no tool of the
// user's "crosschat" server (Claude Code with --strict-mcp-config, Gemini
// CLI with --allowed-mcp-server-names; Codex's own server is "crosschat",
// configured by -c over a settings copy with no server of the user's), the
// hand-off it makes is a child of its task (only the run token makes it
// one: made with the agent's token it would start a new conversation), and
// the user's settings keep the agent's token for the user's own chats.
func TestRealCLIsUseOnlyTheRunsServer(t *testing.T) {
	bin := cliFolder(t, "claude, codex and gemini")
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	eachCLI(t, bin, runConnectedCLI)
}

func runConnectedCLI(t *testing.T, tc cliCase, program, base string) {
	home, work := filepath.Join(base, "home"), filepath.Join(base, "work")
	if err := writeFile(filepath.Join(work, "README.md"), "# Harbour\n"); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("e2e-connected-%s-%d", tc.name, time.Now().UnixNano()%1e6)
	file := "CONNECTED-" + tc.name + ".md"
	fm, names := cliEnvironment(t, tc, home, work, e2e.Script{Marker: marker, Workdir: work, File: file, HandOffTo: "reviewer"})
	r := startRelay(t, filepath.Join(base, "data"))
	builderAndReviewer(t, r, tc.name)
	reveal, err := r.Services.Agents.RotateToken("builder")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := harness.Connect(context.Background(), tc.harness, harness.Env{Home: home}, r.Config().MCPURL(), reveal.Token)
	if err != nil || !conn.Configured {
		t.Fatalf("connect %s: %+v, %v", tc.harness, conn, err)
	}
	if _, err := r.Services.Workers.Save(relay.WorkerConfig{
		AgentSlug: "builder", Harness: tc.harness, Command: program, Workdir: work, Sandbox: relay.SandboxOn,
		AllowedSenders: []string{"operator"}, TimeoutMinutes: 5, Enabled: true, Exclusive: true, Env: names,
	}); err != nil {
		t.Fatalf("save worker: %v", err)
	}
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "builder", Title: "Connected notes " + marker,
		Instructions: "Write " + file + " with a short review, and hand the review itself to the reviewer agent."})
	if err != nil {
		t.Fatalf("post task: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logFailure(t, r, task.ID, fm)
		}
	})
	d := waitDone(t, r, task.ID, 1, r.Config().DataDir, map[string]bool{})
	seen := fm.Seen()
	last := d.Task.Reports[len(d.Task.Reports)-1]
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(last.Result, e2e.FinalPrefix+marker) {
		t.Fatalf("task %s, last report %s: %q / result %q", d.Task.Status, last.Kind, last.Message, last.Result)
	}
	if tc.name != "codex" {
		for _, tool := range seen.ToolsOffered {
			if strings.Contains(tool, "post_task") && !strings.Contains(tool, runServer) {
				t.Errorf("the model was offered %s, of the user's relay server (with the agent's token): %v", tool, seen.ToolsOffered)
			}
		}
	}
	child := e2e.TaskID(seen.Results["post_task"])
	handedOff := false
	for _, c := range d.Related.Children {
		handedOff = handedOff || c.ID == child && c.RecipientSlug == "reviewer" && c.SenderSlug == "builder"
	}
	if child == "" || !handedOff {
		t.Errorf("the hand-off %q is not a child of the run's task (made without the run token?): %+v", child, d.Related.Children)
	}
	if b, err := os.ReadFile(conn.File); err != nil || !strings.Contains(string(b), reveal.Token) {
		t.Errorf("the user's %s lost the agent's token: %v", conn.File, err)
	}
}

// runServer is the relay's server of a run's own configuration
// (runspec.RunServer), as tool names carry it.
const runServer = "crosschat-run"
