package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a worker set up from the command line with --sandbox on runs a
// custom program that tries to read the relay's api-token and to write
// outside its folders, and gets neither, while it writes its working
// folder; its run log says the run was sandboxed and with which paths.
// With --sandbox off the same program gets both (so the test can fail).
func TestSandboxedWorkerFromCLI(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			r := startRelay(t)
			loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir, "--json"}
			dir, outside := t.TempDir(), t.TempDir()
			work := filepath.Join(dir, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			planted := filepath.Join(outside, "planted.txt")
			script := filepath.Join(dir, "agent.sh")
			body := "#!/bin/sh\ncat >/dev/null\n" +
				"if cat '" + r.Config().TokenPath() + "' >/dev/null 2>&1; then echo 'read-token: yes'; else echo 'read-token: no'; fi\n" +
				"if echo x 2>/dev/null > '" + planted + "'; then echo 'write-outside: yes'; else echo 'write-outside: no'; fi\n" +
				"if echo x > made.txt; then echo 'write-work: yes'; else echo 'write-work: no'; fi\n"
			if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, errs, code := run(t, append([]string{"agents", "add", "builder", "--name", "Builder", "--model", "sh", "--capability", "file-system"}, loc...)...); code != 0 {
				t.Fatalf("agents add: %s", errs)
			}
			out, errs, code := run(t, append([]string{"workers", "set", "builder", "--harness", "custom", "--command", script,
				"--workdir", work, "--timeout", "2m", "--sandbox", mode}, loc...)...)
			var st relay.WorkerStatus
			if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Sandbox != mode || st.SandboxOn() != (mode == "on") {
				t.Fatalf("workers set: %d %s %s", code, out, errs)
			}
			plain := loc[:len(loc)-1] // without --json
			out, _, code = run(t, append([]string{"workers", "set", "builder", "--harness", "custom", "--command", script,
				"--workdir", work, "--timeout", "2m", "--sandbox", mode}, plain...)...)
			if said := map[string]string{"on": "Runs are sandboxed", "off": "Runs are not sandboxed"}[mode]; code != 0 || !strings.Contains(out, said) {
				t.Fatalf("workers set says %q, want %q", out, said)
			}
			task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "builder", Title: "Look around", Instructions: "Read the token."})
			noErr(t, err)
			done := waitStatus(t, r, task.ID, relay.StatusCompleted, relay.StatusBlocked)
			result := done.Reports[len(done.Reports)-1].Result
			yes := map[bool]string{true: "yes", false: "no"}[mode == "off"]
			for _, want := range []string{"read-token: " + yes, "write-outside: " + yes, "write-work: yes"} {
				if !strings.Contains(result, want) {
					t.Errorf("result %q lacks %q", result, want)
				}
			}
			if _, err := os.Stat(planted); (err == nil) != (mode == "off") {
				t.Errorf("planted file exists = %v with the sandbox %s", err == nil, mode)
			}
			steps, err := r.Services.Tasks.Activity(task.ID)
			noErr(t, err)
			var said string
			for _, s := range steps {
				if s.Kind == relay.StepSandbox {
					said = s.Text
				}
			}
			if mode == "on" && (!strings.HasPrefix(said, "Sandboxed (Landlock ABI") || !strings.Contains(said, work)) {
				t.Errorf("the run log says %q, want that the run was sandboxed in %s", said, work)
			}
			if mode == "off" && said != "" {
				t.Errorf("an unsandboxed run's log says %q", said)
			}
		})
	}
}

// Ensure a sandboxed run that fails on a path it was refused is blocked
// with a message naming the path and how to allow it, and the worker's last
// run lists it (the worker form offers to allow it); once allowed, the run
// reads it.
func TestSandboxBlockerNamesRefusedPath(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	r := startRelay(t)
	createAgent(t, r, "reader")
	dir, elsewhere := t.TempDir(), t.TempDir()
	needed := filepath.Join(elsewhere, "dataset.csv")
	if err := os.WriteFile(needed, []byte("a,b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\ncat '"+needed+"' || exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := relay.WorkerConfig{AgentSlug: "reader", Harness: "custom", Command: script, Workdir: dir, Sandbox: relay.SandboxOn,
		AllowedSenders: []string{"operator"}, Enabled: true, TimeoutMinutes: 2}
	_, err := r.Services.Workers.Save(cfg)
	noErr(t, err)
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "reader", Title: "Read", Instructions: "Read the dataset."})
	noErr(t, err)
	done := waitStatus(t, r, task.ID, relay.StatusCompleted, relay.StatusBlocked)
	msg := done.Reports[len(done.Reports)-1].Message
	if done.Status != relay.StatusBlocked || !strings.Contains(msg, "The sandbox refused: "+needed) || !strings.Contains(msg, "--allow-path") {
		t.Fatalf("task %s: %q", done.Status, msg)
	}
	st, ok := workerStatus(t, r, "reader")
	if !ok || st.LastRun == nil || len(st.LastRun.Refused) != 1 || st.LastRun.Refused[0] != needed {
		t.Fatalf("last run: %+v", st.LastRun)
	}

	cfg.AllowPaths = []string{needed}
	_, err = r.Services.Workers.Save(cfg)
	noErr(t, err)
	again, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "reader", Title: "Read again", Instructions: "Read the dataset."})
	noErr(t, err)
	if done := waitStatus(t, r, again.ID, relay.StatusCompleted, relay.StatusBlocked); done.Status != relay.StatusCompleted ||
		!strings.Contains(done.Reports[len(done.Reports)-1].Result, "a,b") {
		t.Fatalf("allowed: %s %+v", done.Status, done.Reports)
	}
}
