package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure a worker set up from the command line with --sandbox on runs a
// custom program that tries to read the relay's api-token and to write
// outside its folders, and gets neither, while it writes its working
// folder; its run log says the run was sandboxed and with which paths.
// With --sandbox off the same program gets both (so the test can fail).
func TestSandboxedWorkerFromCLI(t *testing.T) {
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
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
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
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
	// The worker records its last run after it reports the task.
	var last *relay.LastRun
	poll.Until(t, "the worker's last run", 10*time.Second, func() bool {
		st, ok := workerStatus(t, r, "reader")
		last = st.LastRun
		return ok && last != nil && last.TaskID == task.ID
	}, func() string { return fmt.Sprintf("%+v", last) })
	if len(last.Refused) != 1 || last.Refused[0] != needed {
		t.Fatalf("last run: %+v", last)
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

// Ensure deleting a worker from the command line (`workers remove`, which
// calls the bound Workers.Remove the dashboard calls) removes its CLI homes
// (cli-homes/AGENT, every preset's) and nothing else: not another worker's
// home, not the data folder, not where a link a run planted in the home
// leads (the data folder, a folder of the user's); and that deleting an
// agent (Agents.Delete, as the dashboard does) removes its CLI homes too,
// also when it has no worker left. Without the removal the homes stay, so
// the test can fail.
func TestDeletedWorkerTakesItsCLIHome(t *testing.T) {
	r := startRelay(t)
	data := r.Config().DataDir
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", data, "--json"}
	homes := filepath.Join(data, "cli-homes")
	victim := filepath.Join(t.TempDir(), "victim")
	files := map[string]string{
		filepath.Join(victim, "keep.md"):                                                     "precious",
		filepath.Join(homes, "builder", "codex", "skills", "x", "SKILL.md"):                  "builder's",
		filepath.Join(homes, "builder", "gemini", ".gemini", "tmp", "w", "chats", "s.jsonl"): "builder's",
		filepath.Join(homes, "reviewer", "claude-code", "shell-snapshots", "s.sh"):           "reviewer's",
		filepath.Join(homes, "tester", "gemini", ".gemini", "tmp", "w", "chats", "s.jsonl"):  "tester's",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		noErr(t, os.WriteFile(p, []byte(body), 0o600))
	}
	for at, to := range map[string]string{
		filepath.Join(homes, "builder", "codex", "sessions"):         victim,
		filepath.Join(homes, "builder", "claude-code"):               data,
		filepath.Join(homes, "builder", "gemini", ".gemini", "link"): victim,
	} {
		noErr(t, os.Symlink(to, at))
	}
	for _, slug := range []string{"builder", "reviewer", "tester"} {
		if _, errs, code := run(t, append([]string{"agents", "add", slug, "--name", slug, "--model", "sh", "--capability", "file-system"}, loc...)...); code != 0 {
			t.Fatalf("agents add %s: %s", slug, errs)
		}
	}
	for _, slug := range []string{"builder", "reviewer"} {
		if _, errs, code := run(t, append([]string{"workers", "set", slug, "--harness", "custom", "--command", "/bin/sh",
			"--workdir", t.TempDir(), "--timeout", "2m"}, loc...)...); code != 0 {
			t.Fatalf("workers set %s: %s", slug, errs)
		}
	}

	if _, errs, code := run(t, append([]string{"workers", "remove", "builder"}, loc...)...); code != 0 {
		t.Fatalf("workers remove: %s", errs)
	}
	// Removed once the worker's loop has ended, after the deletion returns.
	gone := func(slug string) {
		t.Helper()
		poll.Until(t, "the CLI homes of "+slug+" to go", 10*time.Second, func() bool {
			_, err := os.Lstat(filepath.Join(homes, slug))
			return errors.Is(err, os.ErrNotExist)
		})
	}
	// stay checks the files not in the homes of the deleted agents.
	stay := func(deleted ...string) {
		t.Helper()
		for p, body := range files {
			if rel, err := filepath.Rel(homes, p); err == nil && filepath.IsLocal(rel) && slices.Contains(deleted, strings.Split(rel, string(filepath.Separator))[0]) {
				continue
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != body {
				t.Errorf("%s: %q, %v", p, b, err)
			}
		}
		for _, p := range []string{r.Config().TokenPath(), filepath.Join(data, "relay.db")} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("the data folder lost %s: %v", p, err)
			}
		}
	}
	gone("builder")
	stay("builder")

	// An agent's deletion takes its worker's homes, and those of an agent
	// without a worker.
	noErr(t, r.Services.Agents.Delete("reviewer"))
	noErr(t, r.Services.Agents.Delete("tester"))
	gone("reviewer")
	gone("tester")
	stay("builder", "reviewer", "tester")
	if ov, err := r.Services.Workers.List(); err != nil || len(ov.Workers) != 0 {
		t.Fatalf("workers left: %+v, %v", ov.Workers, err)
	}
	if _, err := r.Service().GetAgent(t.Context(), "reviewer"); relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Fatalf("reviewer not deleted: %v", err)
	}
}

// Ensure the relay, as it starts, removes the CLI homes of the agents that
// have no worker (left by a relay from before the homes went with their
// worker, or by a removal that failed), not following a link in them, and
// keeps those of the workers it has. Without the pruning they stay, so the
// test can fail.
func TestStartPrunesCLIHomes(t *testing.T) {
	cfg := apptest.Config(filepath.Join(t.TempDir(), "data"))
	r := apptest.Start(t, cfg, app.StartOptions{Version: "test"})
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", cfg.DataDir, "--json"}
	for _, slug := range []string{"builder", "ghost"} {
		if _, errs, code := run(t, append([]string{"agents", "add", slug, "--name", slug, "--model", "sh", "--capability", "file-system"}, loc...)...); code != 0 {
			t.Fatalf("agents add %s: %s", slug, errs)
		}
	}
	if _, errs, code := run(t, append([]string{"workers", "set", "builder", "--harness", "custom", "--command", "/bin/sh",
		"--workdir", t.TempDir(), "--timeout", "2m"}, loc...)...); code != 0 {
		t.Fatalf("workers set: %s", errs)
	}
	homes := filepath.Join(cfg.DataDir, "cli-homes")
	victim := filepath.Join(t.TempDir(), "keep.md")
	for p, body := range map[string]string{
		filepath.Join(homes, "builder", "codex", "sessions.jsonl"):   "builder's",
		filepath.Join(homes, "ghost", "gemini", ".gemini", "x.json"): "ghost's",
		filepath.Join(homes, "nobody", "claude-code", "x.sh"):        "nobody's",
		victim: "precious",
	} {
		noErr(t, os.MkdirAll(filepath.Dir(p), 0o700))
		noErr(t, os.WriteFile(p, []byte(body), 0o600))
	}
	noErr(t, os.Symlink(filepath.Dir(victim), filepath.Join(homes, "ghost", "codex")))
	apptest.Stop(t, r)

	apptest.Start(t, cfg, app.StartOptions{Version: "test"})
	for _, slug := range []string{"ghost", "nobody"} {
		if _, err := os.Lstat(filepath.Join(homes, slug)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the CLI homes of %s, which has no worker, are still there: %v", slug, err)
		}
	}
	for p, want := range map[string]string{filepath.Join(homes, "builder", "codex", "sessions.jsonl"): "builder's", victim: "precious"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}
