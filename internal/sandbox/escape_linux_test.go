package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure the relay's preparation of a worker's CLI home never follows a
// link a confined run planted there: a Gemini run that swaps its home's
// .gemini for a link to another folder of the user's (~/.claude) does not
// make the next run's setup delete that folder's entries or replace its
// files with links; the home gets a real .gemini again. Without the
// os.Root the setup works inside the victim folder, so the test can fail.
func TestCLIHomePlantedLinkNotFollowed(t *testing.T) {
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t)
	for rel, body := range userCLIFiles {
		writeTestFile(t, filepath.Join(home, rel), body)
	}
	victim := filepath.Join(home, "projects", "other")
	writeTestFile(t, filepath.Join(victim, "agents", "keep.md"), "precious")
	writeTestFile(t, filepath.Join(victim, "settings.json"), "precious")
	script := try + `try plant sh -c 'mv "$GEMINI_CLI_HOME/.gemini" "$GEMINI_CLI_HOME/old" && ln -s "$VICTIM" "$GEMINI_CLI_HOME/.gemini"'`
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: "gemini", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Args: []string{"-c", script},
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "VICTIM=" + victim}, Workdir: work, RunDir: run,
	}
	w := sandbox.Wrapper{Self: self, Protected: []string{data}, Homes: filepath.Join(data, "cli-homes")}
	wantProbe(t, runProbe(t, w, true, req), []string{"plant"}, "ok")
	// The worker's next run: the relay prepares its home again.
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(victim, "agents", "keep.md")); err != nil || string(b) != "precious" {
		t.Errorf("victim/agents/keep.md: %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(victim, "settings.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("victim/settings.json is no longer the user's file: %v, %v", fi, err)
	}
	ents, _ := os.ReadDir(victim)
	if len(ents) != 3 { // agents, settings.json, notes.md
		t.Errorf("victim folder changed: %v", ents)
	}
	gemini := filepath.Join(data, "cli-homes", "builder", "gemini", ".gemini")
	if fi, err := os.Lstat(gemini); err != nil || !fi.IsDir() {
		t.Fatalf("the run's .gemini is not a real folder again: %v, %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(gemini, "settings.json")); err != nil || l != filepath.Join(home, ".gemini", "settings.json") {
		t.Errorf("the run's .gemini/settings.json: %q, %v", l, err)
	}
}
