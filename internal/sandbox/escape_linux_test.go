package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// Ensure a rule path swapped for a link after the relay checked it (by a
// process left from an earlier run, or another worker, between Wrap and
// the child's confinement) stops the run (exit 126, naming the path)
// rather than allowing where the link leads (the data folder), also for a
// worker that allows unsandboxed runs (which are for kernels without
// Landlock, not for rules that fail). Following the link, the child reads
// the api-token, so the test can fail.
func TestRulePathSwappedAfterWrap(t *testing.T) {
	self := landlockSelf(t)
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "sandbox required", true: "unsandboxed allowed"}[allow], func(t *testing.T) {
			home, data, work, run, _ := layout(t)
			folder := filepath.Join(work, "sub")
			if err := os.MkdirAll(folder, 0o700); err != nil {
				t.Fatal(err)
			}
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn, AllowUnsandboxed: allow},
				Program: "/bin/sh", Args: []string{"-c", try + `try read-token cat "$DATA/api-token"`},
				Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "DATA=" + data}, Workdir: folder, RunDir: run,
			}
			s, err := sandbox.Wrapper{Self: self, Protected: []string{data}}.Wrap(req)
			if err != nil || !s.Confined {
				t.Fatalf("wrap: %+v, %v", s, err)
			}
			// What a process left running by an earlier run (read-write
			// on work) does between the relay's check and the child's.
			if err := os.Rename(folder, folder+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(data, folder); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(s.Program, s.Args...)
			cmd.Env = req.Env
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 126 || !strings.Contains(string(out), folder+" is a symbolic link now") ||
				strings.Contains(string(out), "read-token") {
				t.Errorf("the child of a swapped rule path: %v: %s", err, out)
			}
		})
	}
}

// Ensure a confined run of Claude Code, Codex or Gemini CLI reads the
// user's settings only through its CLI home's links, not the rest of the
// user's CLI folder: not the prompt history, the file history (copies of
// other projects' files), another project's transcripts (Claude Code), the IDE extension's lock file (its MCP server's
// token), Gemini CLI's tmp; without the sandbox it reads them all (so the
// test can fail).
func TestCLIFolderReadOnlyThroughLinks(t *testing.T) {
	self := landlockSelf(t)
	tests := []struct {
		harness, env, linked string
		hidden               []string
	}{
		{"claude-code", "CLAUDE_CONFIG_DIR", "settings.json", []string{".claude/history.jsonl", ".claude/file-history/s/f", ".claude/ide/1.lock", ".claude/projects/-other/s.jsonl"}},
		{"codex", "CODEX_HOME", "config.toml", []string{".codex/history.jsonl", ".codex/log/codex-tui.log"}},
		{"gemini", "GEMINI_CLI_HOME", ".gemini/settings.json", []string{".gemini/tmp/x/logs.json"}},
	}
	for _, tt := range tests {
		for _, sandboxed := range []bool{true, false} {
			t.Run(tt.harness+map[bool]string{true: " on", false: " off"}[sandboxed], func(t *testing.T) {
				home, data, work, run, _ := layout(t)
				for rel, body := range userCLIFiles {
					writeTestFile(t, filepath.Join(home, rel), body)
				}
				script := try
				for i, rel := range tt.hidden {
					writeTestFile(t, filepath.Join(home, rel), "private")
					script += fmt.Sprintf("try hidden%d cat %q\n", i, filepath.Join(home, rel))
				}
				script += `if [ -n "$` + tt.env + `" ]; then try linked cat "$` + tt.env + `/` + tt.linked + `"; else echo linked ok; fi`
				req := runspec.SandboxRequest{
					Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: tt.harness, Sandbox: relay.SandboxOn},
					Program: "/bin/sh", Args: []string{"-c", script},
					Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
				}
				w := sandbox.Wrapper{Self: self, Protected: []string{data}, Homes: filepath.Join(data, "cli-homes")}
				got := runProbe(t, w, sandboxed, req)
				var hidden []string
				for i := range tt.hidden {
					hidden = append(hidden, fmt.Sprintf("hidden%d", i))
				}
				wantProbe(t, got, []string{"linked"}, "ok")
				wantProbe(t, got, hidden, map[bool]string{true: "denied", false: "ok"}[sandboxed])
			})
		}
	}
}
