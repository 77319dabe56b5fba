//go:build unix

package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

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
	gone := func(slug string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(homes, slug)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the CLI homes of %s are still there: %v", slug, err)
		}
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
