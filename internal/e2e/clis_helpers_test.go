package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/e2e"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// newRoot makes the folder for the CLIs' homes and working folders, outside
// /tmp, and removes it when the test ends.
func newRoot(t *testing.T) string {
	t.Helper()
	parent := os.Getenv(EnvRoot)
	if parent == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no folder for the CLIs (set %s): %v", EnvRoot, err)
		}
		parent = filepath.Join(cache, "crosschat-e2e")
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("CROSSCHAT_E2E_KEEP") != "" {
			t.Logf("kept %s", root)
			return
		}
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	return root
}

// startRelay runs a whole relay in-process on a free loopback port.
func startRelay(t *testing.T, dataDir string) *app.Relay {
	t.Helper()
	return apptest.Start(t, apptest.Config(dataDir), app.StartOptions{Version: "e2e"})
}

// waitDone polls the task until it is completed or blocked with at least
// rounds final reports, failing after runDeadline. While it waits it picks
// up the run token from the run folder's mcp.json, for the token checks.
func waitDone(t *testing.T, r *app.Relay, id string, rounds int, dataDir string, tokens map[string]bool) app.TaskDetail {
	t.Helper()
	deadline := time.Now().Add(runDeadline)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	mcpFile := filepath.Join(dataDir, "runs", id, "mcp.json")
	for {
		if b, err := os.ReadFile(mcpFile); err == nil {
			if tok := runTokenPattern.FindString(string(b)); tok != "" {
				tokens[tok] = true
			}
		}
		d, err := r.Services.Tasks.Get(id)
		if err != nil {
			t.Fatalf("get task: %v", err)
		}
		finals := 0
		for _, rep := range d.Task.Reports {
			if rep.Kind == relay.ReportCompleted || rep.Kind == relay.ReportBlocked {
				finals++
			}
		}
		if (d.Task.Status == relay.StatusCompleted || d.Task.Status == relay.StatusBlocked) && finals >= rounds {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: task still %s after %s", rounds, d.Task.Status, runDeadline)
		}
		<-tick.C
	}
}

func activity(t *testing.T, r *app.Relay, id string) []relay.ActivityEntry {
	t.Helper()
	steps, err := r.Services.Tasks.Activity(id)
	if err != nil {
		t.Fatalf("activity: %v", err)
	}
	return steps
}

// wantStep fails unless some step matches.
func wantStep(t *testing.T, steps []relay.ActivityEntry, what string, match func(relay.ActivityEntry) bool) {
	t.Helper()
	for _, e := range steps {
		if match(e) {
			return
		}
	}
	t.Errorf("no %s among the steps", what)
}

func countKind(steps []relay.ActivityEntry, kind string) int {
	n := 0
	for _, e := range steps {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// logFailure logs the task, its steps (the CLI's stderr shows up in the
// end step's message) and what the fake model saw.
func logFailure(t *testing.T, r *app.Relay, id string, fm *e2e.FakeModel) {
	t.Helper()
	if d, err := r.Services.Tasks.Get(id); err == nil {
		for _, rep := range d.Task.Reports {
			t.Logf("report %s: %s\n%s", rep.Kind, rep.Message, rep.Result)
		}
	}
	if steps, err := r.Services.Tasks.Activity(id); err == nil {
		for _, e := range steps {
			b, _ := json.Marshal(e)
			t.Logf("step %s", b)
		}
	}
	if fm != nil {
		s := fm.Seen()
		t.Logf("fake model: requests %v\ntools %v\nresults %v\nround 2: %v %s\nproblems %v",
			s.Requests, s.ToolsOffered, s.Results, s.Round2History, s.Round2Detail, s.Problems)
		body := s.LastBody
		if len(body) > 6000 {
			body = body[:6000] + "…"
		}
		t.Logf("last model request: %s", body)
	}
}

func writeFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
