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
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// try is the probe's helper: "name ok" or "name denied" per access.
const try = `try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi; }
`

// userCLIFiles are files of the user's own CLI folders that configure or
// extend the CLI (hooks, MCP servers, instructions, commands, skills,
// plugins, extensions, its installed versions): run later, outside any
// sandbox, when the user starts the CLI.
var userCLIFiles = map[string]string{
	".claude/settings.json":                        `{"hooks":{}}`,
	".claude.json":                                 `{"numStartups":1,"mcpServers":{}}`,
	".claude/CLAUDE.md":                            "# mine",
	".claude/commands/deploy.md":                   "deploy",
	".claude/agents/helper.md":                     "helper",
	".claude/skills/tidy/SKILL.md":                 "tidy",
	".claude/plugins/config.json":                  "{}",
	".claude/.credentials.json":                    `{"claudeAiOauth":{}}`,
	".local/share/claude/versions/2.1":             "#!/bin/sh",
	".codex/config.toml":                           "model = \"mine\"\n",
	".codex/AGENTS.md":                             "# mine",
	".codex/rules/default.rules":                   "",
	".codex/skills/mine/SKILL.md":                  "mine",
	".codex/auth.json":                             "{}",
	".gemini/settings.json":                        "{}",
	".gemini/GEMINI.md":                            "# mine",
	".gemini/extensions/ext/gemini-extension.json": "{}",
	".gemini/commands/go.toml":                     "",
}

// Ensure a confined run of Claude Code, Codex or Gemini CLI cannot change
// what configures or extends the user's own CLI, neither an existing file
// nor a new one beside it (a hook, an MCP server, AGENTS.md, a command, a
// skill, a plugin, an extension, an installed version), while it writes
// the user's session transcripts (which session workers resume), reads
// the user's settings through its own CLI home, and writes that home (the
// copy of ~/.claude.json the CLI rewrites), leaving the user's untouched.
// Without the sandbox each of those writes succeeds, so the test can fail.
func TestCLISettingsReadOnly(t *testing.T) {
	self := landlockSelf(t)
	tests := []struct {
		harness string
		// denied are written (an existing file overwritten, or a new
		// one); allowed are written in both modes.
		denied, allowed []string
		// own are checked in the sandbox only: CLI home writes and reads.
		own string
	}{
		{harness: "claude-code",
			denied: []string{".claude/settings.json", ".claude.json", ".claude/CLAUDE.md", ".claude/commands/deploy.md",
				".claude/commands/new.md", ".claude/agents/evil.md", ".claude/skills/tidy/SKILL.md", ".claude/plugins/config.json",
				".claude/hooks.sh", ".claude/.credentials.json", ".local/share/claude/versions/2.1", ".claude/settings.local.json",
				// Another project's transcript and memory (loaded when
				// the user works there).
				".claude/projects/-work/session.jsonl", ".claude/projects/-other/memory/MEMORY.md"},
			own: `try own-settings grep -q hooks "$CLAUDE_CONFIG_DIR/settings.json"
try own-global-read grep -q numStartups "$CLAUDE_CONFIG_DIR/.claude.json"
try own-global-write sh -c 'echo "{\"mcpServers\":{\"x\":{}}}" > "$CLAUDE_CONFIG_DIR/.claude.json"'
try own-state sh -c 'mkdir -p "$CLAUDE_CONFIG_DIR/todos" && echo x > "$CLAUDE_CONFIG_DIR/todos/t.json"'
try own-transcript sh -c 'echo x >> "$CLAUDE_CONFIG_DIR/projects/$(pwd -P | sed "s/[^a-zA-Z0-9]/-/g")/own.jsonl"'
try own-memory sh -c 'mkdir -p "$CLAUDE_CONFIG_DIR/projects/$(pwd -P | sed "s/[^a-zA-Z0-9]/-/g")/memory" && echo x > "$CLAUDE_CONFIG_DIR/projects/$(pwd -P | sed "s/[^a-zA-Z0-9]/-/g")/memory/MEMORY.md"'
try own-relink-settings sh -c 'rm -f "$CLAUDE_CONFIG_DIR/settings.json" && echo "{\"hooks\":{\"x\":1}}" > "$CLAUDE_CONFIG_DIR/settings.json"'
`},
		{harness: "codex",
			denied: []string{".codex/config.toml", ".codex/AGENTS.md", ".codex/rules/default.rules", ".codex/skills/mine/SKILL.md",
				".codex/skills/new/SKILL.md", ".codex/auth.json", ".codex/hooks.json", ".codex/prompts/p.md"},
			allowed: []string{".codex/sessions/2026/12/03/rollout-x.jsonl", ".codex/session_index.jsonl"},
			own: `try own-settings grep -q mine "$CODEX_HOME/config.toml"
try own-state sh -c 'echo x > "$CODEX_HOME/state_5.sqlite" && mkdir -p "$CODEX_HOME/skills/.system" && echo x > "$CODEX_HOME/skills/.system/s.md"'
try own-transcript sh -c 'echo x >> "$CODEX_HOME/session_index.jsonl"'
`},
		{harness: "gemini",
			denied: []string{".gemini/settings.json", ".gemini/GEMINI.md", ".gemini/extensions/ext/gemini-extension.json",
				".gemini/extensions/new/gemini-extension.json", ".gemini/commands/go.toml", ".gemini/tmp/bin/rg"},
			own: `try own-settings test -f "$GEMINI_CLI_HOME/.gemini/settings.json"
try own-state sh -c 'mkdir -p "$GEMINI_CLI_HOME/.gemini/tmp/work/chats" && echo x > "$GEMINI_CLI_HOME/.gemini/tmp/work/chats/s.jsonl"'
`},
	}
	for _, tt := range tests {
		for _, sandboxed := range []bool{true, false} {
			t.Run(tt.harness+map[bool]string{true: "/on", false: "/off"}[sandboxed], func(t *testing.T) {
				home, data, work, run := cliLayout(t)
				script := try
				for _, rel := range append(append([]string{}, tt.denied...), tt.allowed...) {
					script += "try " + rel + ` sh -c 'mkdir -p "$(dirname "$HOME/` + rel + `")" 2>/dev/null; echo planted > "$HOME/` + rel + `"'` + "\n"
				}
				if sandboxed {
					script += tt.own
				}
				env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
				req := runspec.SandboxRequest{
					Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: tt.harness, Sandbox: relay.SandboxOn},
					Program: "/bin/sh", Args: []string{"-c", script}, Env: env, Workdir: work, RunDir: run,
				}
				homes := filepath.Join(data, "cli-homes")
				w := sandbox.Wrapper{Self: self, Protected: []string{data}, Homes: homes}
				got := runProbe(t, w, sandboxed, req)
				wantProbe(t, got, tt.denied, map[bool]string{true: "denied", false: "ok"}[sandboxed])
				wantProbe(t, got, tt.allowed, "ok")
				for _, rel := range tt.denied {
					if b, err := os.ReadFile(filepath.Join(home, rel)); sandboxed && err == nil && strings.Contains(string(b), "planted") {
						t.Errorf("~/%s was planted", rel)
					}
				}
				if !sandboxed {
					return
				}
				for k, v := range got {
					if strings.HasPrefix(k, "own-") && v != "ok" {
						t.Errorf("%s: %q, want ok", k, v)
					}
				}
				// The run's changes to its own home stay there: the user's
				// global settings are untouched, and the next run's home
				// has the user's settings again, not the run's.
				for rel, body := range userCLIFiles {
					if b, err := os.ReadFile(filepath.Join(home, rel)); err != nil || string(b) != body {
						t.Errorf("the user's ~/%s changed: %q, %v", rel, b, err)
					}
				}
				if _, err := w.Wrap(req); err != nil {
					t.Fatal(err)
				}
				own := filepath.Join(homes, "builder", tt.harness)
				if tt.harness == "claude-code" {
					for _, f := range []string{"settings.json", ".claude.json"} {
						if b, err := os.ReadFile(filepath.Join(own, f)); err != nil || strings.Contains(string(b), `"x"`) {
							t.Errorf("the next run's %s is the run's, not the user's: %q, %v", f, b, err)
						}
					}
				}
			})
		}
	}
}

// Ensure the run folder is read-only to a confined run but for its result
// file and temporary folder: the MCP configuration with the run's token,
// the prompt and the CLI's run settings cannot be changed, and no file
// can be added; without the sandbox each write succeeds.
func TestRunFolderReadOnly(t *testing.T) {
	self := landlockSelf(t)
	for _, sandboxed := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[sandboxed], func(t *testing.T) {
			home, data, work, run, _ := layout(t)
			writeTestFile(t, filepath.Join(run, "mcp.json"), `{"mcpServers":{}}`)
			writeTestFile(t, filepath.Join(run, "claude-mcp.json"), `{}`)
			script := try + `try read-mcp cat "$RUN/mcp.json"
try write-mcp sh -c 'echo x > "$RUN/mcp.json"'
try write-settings sh -c 'echo x > "$RUN/claude-mcp.json"'
try write-prompt sh -c 'echo x > "$RUN/task.md"'
try remove-mcp rm -f "$RUN/mcp.json"
try create-in-run sh -c 'echo x > "$RUN/planted"'
try write-result sh -c 'echo answer > "$RUN/result.md"'
try write-tmp sh -c 'echo x > "$RUN/tmp/scratch"'
`
			env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "RUN=" + run}
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
				Program: "/bin/sh", Args: []string{"-c", script}, Env: env, Workdir: work, RunDir: run,
				Outputs: []string{filepath.Join(run, "result.md")},
			}
			got := runProbe(t, sandbox.Wrapper{Self: self, Protected: []string{data}}, sandboxed, req)
			wantProbe(t, got, []string{"write-mcp", "write-settings", "write-prompt", "remove-mcp", "create-in-run"},
				map[bool]string{true: "denied", false: "ok"}[sandboxed])
			wantProbe(t, got, []string{"read-mcp", "write-result", "write-tmp"}, "ok")
		})
	}
}

// landlockSelf skips the test on a kernel without Landlock, and returns
// our own binary (the test binary), which confines itself when started
// with the hidden verb.
func landlockSelf(t *testing.T) string {
	t.Helper()
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// runProbe runs req's probe script, in w's sandbox when sandboxed (which
// must confine it) or plainly, in its working folder with its environment,
// and returns its "name ok|denied" lines (the whole output under "").
func runProbe(t *testing.T, w sandbox.Wrapper, sandboxed bool, req runspec.SandboxRequest) map[string]string {
	t.Helper()
	s := runspec.Sandboxed{Program: req.Program, Args: req.Args}
	if sandboxed {
		var err error
		if s, err = w.Wrap(req); err != nil || !s.Confined {
			t.Fatalf("wrap: %+v, %v", s, err)
		}
	} else if err := os.MkdirAll(filepath.Join(req.RunDir, sandbox.TempDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.Program, s.Args...)
	cmd.Env, cmd.Dir = req.Env, req.Workdir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]string{"": string(out)}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			got[k] = v
		}
	}
	return got
}

// wantProbe checks that each of names answered want.
func wantProbe(t *testing.T, got map[string]string, names []string, want string) {
	t.Helper()
	for _, k := range names {
		if got[k] != want {
			t.Errorf("%s: %q, want %s\n%s", k, got[k], want, got[""])
		}
	}
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Ensure the relay's preparation of a worker's CLI home never follows a
// link a confined run planted there: a Gemini run that swaps its home's
// .gemini for a link to another folder of the user's (~/.claude) does not
// make the next run's setup delete that folder's entries or replace its
// files with links; the home gets a real .gemini again. Without the
// os.Root the setup works inside the victim folder, so the test can fail.
func TestCLIHomePlantedLinkNotFollowed(t *testing.T) {
	self := landlockSelf(t)
	home, data, work, run := cliLayout(t)
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
				home, data, work, run := cliLayout(t)
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

// cliLayout is layout with the user's CLI folders (userCLIFiles).
func cliLayout(t *testing.T) (home, data, work, run string) {
	t.Helper()
	home, data, work, run, _ = layout(t)
	for rel, body := range userCLIFiles {
		writeTestFile(t, filepath.Join(home, rel), body)
	}
	return home, data, work, run
}
