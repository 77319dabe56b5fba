package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"golang.org/x/sys/unix"
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
		t.Skip("this kernel has no Landlock")
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

// clearWrapper prepares CLI homes the way the relay does on Linux, without
// depending on this kernel's Landlock: these tests look at the home a run
// gets, not at its confinement.
func clearWrapper(data string) sandbox.Wrapper {
	return sandbox.Wrapper{Self: "/bin/true", Protected: []string{data}, Homes: filepath.Join(data, "cli-homes"), GOOS: "linux",
		ABI: func() int { return 7 }, Seccomp: func() bool { return true }, UID: func() int { return 1000 }}
}

// Ensure the relay clears a worker's CLI home before each run of what the
// last run left there that the next would run or load: a program under
// each place the CLIs run or load one from (Gemini CLI's tmp/bin ripgrep,
// its ~/.agents skills, its project memory skills and checkpoint git
// hooks; Claude Code's shell snapshots, session environments, remote
// and policy settings, local install, jobs, scheduled tasks, launch and
// daemon settings, workflows and hooks; Codex's shell snapshots, its arg0
// helpers, its own and system skills, memories and plugins; a script under
// a name no CLI is known to read), and a symbolic link planted there
// (under a name of its own, in place of such a folder, inside a kept
// folder), which is removed and its target left as it was; while the
// session transcripts (the user's, through the home's links, and Gemini
// CLI's own chats in the home) stay, and the user's settings are linked
// again. Without the clearing each planted program is still there for the
// next run, so the test fails.
func TestCLIHomeClearedBeforeRun(t *testing.T) {
	tests := []struct {
		harness string
		// planted are written in the worker's home (relative to it) as
		// executables; links are made there pointing at the victim folder.
		planted, links []string
		// gone are folders the planted ones are in, gone with them.
		gone []string
		// kept are written through the home (relative to it); they stay.
		kept []string
		// linked is a link to the user's settings the next run gets.
		linked string
	}{
		{harness: "claude-code",
			planted: []string{"shell-snapshots/snapshot-bash-1-x.sh", "session-env/3f2a/sessionstart-hook-0.sh", "remote-settings.json",
				"policy-limits.json", "settings.local.json", "local/claude", "hooks/pre.sh", "jobs/j/run.sh", "scheduled_tasks.json",
				"launch.json", "daemon.json", "workflows/w.md", "agent-memory/a/MEMORY.md", "evil.sh"},
			links:  []string{"evil-link", "downloads", "teams"},
			gone:   []string{"shell-snapshots", "session-env", "local"},
			kept:   []string{"projects/{project}/s1.jsonl", "projects/{project}/memory/MEMORY.md"},
			linked: "settings.json"},
		{harness: "codex",
			planted: []string{"shell_snapshots/s.sh", "tmp/arg0/codex-arg0Ab12/apply_patch", "skills/evil/SKILL.md", "skills/evil/scripts/run.sh",
				"skills/.system/imagegen/scripts/gen.py", "memories/MEMORY.md", "plugins/cache/evil/plugin.json", "prompts/p.md", "hooks.json",
				"state_5.sqlite", "evil.sh"},
			links:  []string{"evil-link", "tmp/arg0/codex-arg0Zz99", "log"},
			gone:   []string{"tmp", "shell_snapshots", "memories", "skills"},
			kept:   []string{"sessions/2026/12/03/rollout-1.jsonl", "session_index.jsonl"},
			linked: "config.toml"},
		{harness: "gemini",
			planted: []string{".gemini/tmp/bin/rg", ".agents/skills/evil/SKILL.md", ".gemini/tmp/mine/memory/skills/evil/SKILL.md",
				".gemini/history/mine/.git/hooks/post-commit", ".gemini/skills/evil/SKILL.md", ".gemini/policies/evil.toml",
				".gemini/keybindings.json", "evil.sh",
				// The project registry, whose names Gemini CLI takes
				// unchecked: {"projects":{WORK:"mine/chats"}} makes
				// tmp/mine/chats the project's temporary folder, whose
				// memory (and its skills) it loads; nothing in a folder
				// in chats stays.
				".gemini/projects.json", ".gemini/tmp/mine/chats/memory/skills/evil/SKILL.md",
				".gemini/tmp/mine/chats/memory/MEMORY.md", ".gemini/tmp/mine/chats/0f83ac72/session-sub.jsonl"},
			links: []string{"evil-link", ".gemini/tmp/other", ".gemini/history/other", ".gemini/tmp/mine/chats/link.jsonl"},
			gone:  []string{".gemini/tmp/bin", ".agents", ".gemini/history", ".gemini/tmp/mine/memory", ".gemini/tmp/mine/chats/memory"},
			kept: []string{".gemini/tmp/mine/chats/session-2026-12-03T17-37-0f83ac72.jsonl",
				".gemini/tmp/mine/.project_root"},
			linked: ".gemini/settings.json"},
	}
	for _, tt := range tests {
		t.Run(tt.harness, func(t *testing.T) {
			home, data, work, run := cliLayout(t)
			victim := filepath.Join(home, "victim")
			writeTestFile(t, filepath.Join(victim, "keep.md"), "precious")
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: tt.harness, Sandbox: relay.SandboxOn},
				Program: "/bin/sh", Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
			}
			w := clearWrapper(data)
			if _, err := w.Wrap(req); err != nil {
				t.Fatalf("first wrap: %v", err)
			}
			own := filepath.Join(data, "cli-homes", "builder", tt.harness)
			// Claude Code's transcripts folder of the working folder, which
			// the first run's setup made in the user's projects.
			var project string
			if ents, _ := os.ReadDir(filepath.Join(home, ".claude", "projects")); len(ents) == 1 {
				project = ents[0].Name()
			}
			expand := func(rel string) string {
				return filepath.Join(own, strings.ReplaceAll(rel, "{project}", project))
			}
			// What the run leaves: programs, and links to the victim.
			for _, rel := range tt.planted {
				writeTestFile(t, filepath.Join(own, rel), "#!/bin/sh\ntouch /tmp/pwned\n")
				if err := os.Chmod(filepath.Join(own, rel), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, rel := range tt.links {
				p := filepath.Join(own, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(victim, p); err != nil {
					t.Fatal(err)
				}
			}
			for _, rel := range tt.kept {
				writeTestFile(t, expand(rel), "transcript")
			}

			// The worker's next run.
			if _, err := w.Wrap(req); err != nil {
				t.Fatalf("next wrap: %v", err)
			}
			for _, rel := range slices.Concat(tt.planted, tt.links, tt.gone) {
				if _, err := os.Lstat(filepath.Join(own, rel)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left by the last run is still in the next run's home: %v", rel, err)
				}
			}
			if ents, err := os.ReadDir(victim); err != nil || len(ents) != 1 {
				t.Errorf("the links' target changed: %v, %v", ents, err)
			}
			if b, err := os.ReadFile(filepath.Join(victim, "keep.md")); err != nil || string(b) != "precious" {
				t.Errorf("victim/keep.md: %q, %v", b, err)
			}
			for _, rel := range tt.kept {
				if b, err := os.ReadFile(expand(rel)); err != nil || string(b) != "transcript" {
					t.Errorf("the session file %s was not kept: %q, %v", rel, b, err)
				}
			}
			if l, err := os.Readlink(filepath.Join(own, tt.linked)); err != nil || !filepath.IsAbs(l) || !within(l, home) {
				t.Errorf("the next run's %s is not the user's: %q, %v", tt.linked, l, err)
			}
		})
	}
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

// Ensure removing a worker's CLI homes removes its folder in the CLI homes
// and nothing else: not where a link planted in it leads (the relay's data
// folder, a folder of the user's), not another worker's home, not the data
// folder; a slug that is not one name removes nothing. Following the links,
// the removal empties the victims, so the test can fail.
func TestRemoveHome(t *testing.T) {
	home, data, _, _, _ := layout(t)
	w := clearWrapper(data)
	victim := filepath.Join(home, "victim")
	writeTestFile(t, filepath.Join(victim, "keep.md"), "precious")
	writeTestFile(t, filepath.Join(w.Homes, "builder", "codex", "skills", "x", "SKILL.md"), "x")
	writeTestFile(t, filepath.Join(w.Homes, "reviewer", "gemini", ".gemini", "tmp", "r", "chats", "s.jsonl"), "other")
	for _, l := range []struct{ at, to string }{
		{filepath.Join(w.Homes, "builder", "codex", "sessions"), victim},
		{filepath.Join(w.Homes, "builder", "data"), data},
		{filepath.Join(w.Homes, "builder", "claude-code"), victim},
	} {
		if err := os.Symlink(l.to, l.at); err != nil {
			t.Fatal(err)
		}
	}
	for _, slug := range []string{"", ".", "..", "reviewer/..", "builder"} {
		if err := w.RemoveHome(slug); err != nil {
			t.Fatalf("remove %q: %v", slug, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.Homes, "builder")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worker's CLI homes are still there: %v", err)
	}
	for p, want := range map[string]string{
		filepath.Join(victim, "keep.md"): "precious",
		filepath.Join(data, "api-token"): "cca_admin_secret",
		filepath.Join(w.Homes, "reviewer", "gemini", ".gemini", "tmp", "r", "chats", "s.jsonl"): "other",
	} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	if err := w.RemoveHome("nobody"); err != nil {
		t.Errorf("removing homes that do not exist: %v", err)
	}
	if err := (sandbox.Wrapper{}).RemoveHome("builder"); err != nil {
		t.Errorf("a wrapper without homes: %v", err)
	}
}

// Ensure a session file of a Gemini worker's CLI home that is a hard link
// to a file outside the home (one the run could write, linked into its
// chats) is not kept for the next run, which might no longer be allowed
// that file; the file itself is left as it was. Keeping every regular file
// its pattern names, the link stays in the next run's home, so the test
// can fail.
func TestCLIHomeHardLinkNotKept(t *testing.T) {
	w, req, own := geminiHome(t)
	secret := filepath.Join(filepath.Dir(req.Workdir), "repoA", "secret.env")
	writeTestFile(t, secret, "TOKEN=1")
	const link = ".gemini/tmp/mine/chats/session-2026-12-03T17-37-0f83ac72.jsonl"
	if err := os.MkdirAll(filepath.Dir(filepath.Join(own, link)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(own, link)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(own, link)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hard link to %s is still in the next run's home: %v", secret, err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "TOKEN=1" {
		t.Errorf("the linked file changed: %q, %v", b, err)
	}
}

// Ensure a Gemini worker's CLI home keeps only the session files Gemini
// CLI writes (session-*.jsonl, session-*.json), each of at most 64 MiB,
// the newest 500 of a project's chats: another name, a bigger file and the
// oldest past 500 are gone in the next run's home. Keeping every file in
// chats, each of those stays, so the test can fail.
func TestCLIHomeKeptFilesBounded(t *testing.T) {
	w, req, own := geminiHome(t)
	chats := filepath.Join(own, ".gemini", "tmp", "mine", "chats")
	base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var kept []string
	for i := range 500 {
		name := fmt.Sprintf("session-2026-12-03T00-00-%08d.jsonl", i)
		writeTestFile(t, filepath.Join(chats, name), "transcript")
		mtime := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(chats, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			kept = append(kept, name)
		}
	}
	writeTestFile(t, filepath.Join(chats, "session-old.json"), "transcript")
	kept = append(kept, "session-old.json")
	if err := os.Chtimes(filepath.Join(chats, "session-old.json"), base.Add(time.Hour), base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	gone := []string{"session-2026-12-03T00-00-00000000.jsonl", "notes.md", "session-x.sh", "session-big.jsonl"}
	writeTestFile(t, filepath.Join(chats, "notes.md"), "planted")
	writeTestFile(t, filepath.Join(chats, "session-x.sh"), "planted")
	big, err := os.Create(filepath.Join(chats, "session-big.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: its size, not its blocks, counts.
	if err := errors.Join(big.Truncate(64<<20+1), big.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(chats, "session-big.jsonl"), base.Add(2*time.Hour), base.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	for _, name := range gone {
		if _, err := os.Lstat(filepath.Join(chats, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the next run's home: %v", name, err)
		}
	}
	missing := 0
	for _, name := range kept {
		if b, err := os.ReadFile(filepath.Join(chats, name)); err != nil || string(b) != "transcript" {
			missing++
		}
	}
	if ents, err := os.ReadDir(chats); err != nil || len(ents) != 500 || missing > 0 {
		t.Errorf("the next run's chats hold %d files (%v), %d of the newest 500 missing; want those 500", len(ents), err, missing)
	}
}

// Ensure a process left from a run that writes its CLI home nonstop (here,
// through a descriptor of the home, as a leftover confined to that folder
// does) writes nothing the next run finds in its home: the next run's home
// is a new folder. Clearing the home in place, what the leftover writes
// after the clearing is in the next run's home, so the test can fail.
func TestCLIHomeLeftoverWriterKeptOut(t *testing.T) {
	w, req, own := geminiHome(t)
	fd, err := unix.Open(own, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		// Writes until told to stop, and once after.
		for i := 0; ; i++ {
			f, err := unix.Openat(fd, fmt.Sprintf("leftover-%d", i), unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
			if err != nil {
				done <- err
				return
			}
			unix.Close(f)
			select {
			case <-stop:
				f, err := unix.Openat(fd, "leftover-last", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
				if err == nil {
					unix.Close(f)
				}
				done <- err
				return
			default:
			}
		}
	}()
	// Let it write before the next run is prepared.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Lstat(filepath.Join(own, "leftover-100")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leftover wrote nothing")
		}
		time.Sleep(time.Millisecond)
	}
	_, werr := w.Wrap(req)
	close(stop)
	// ENOENT: its folder was removed, as the last home.
	if err := <-done; err != nil && err != unix.ENOENT {
		t.Fatalf("the leftover: %v", err)
	}
	if werr != nil {
		t.Fatalf("next wrap: %v", werr)
	}
	ents, err := os.ReadDir(own)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "leftover-") {
			t.Fatalf("what the leftover wrote (%s) is in the next run's home", e.Name())
		}
	}
}

// Ensure what the removal of a worker's last CLI homes left in its folder
// of homes (homes moved aside, folders a removal moved up) is removed
// before the next run, not only when the worker goes. Removing only the
// homes moved aside, the folders moved up stay, so the test can fail.
func TestCLIHomeLeftFoldersRemoved(t *testing.T) {
	w, req, own := geminiHome(t)
	homes := filepath.Dir(own)
	for _, rel := range []string{".crosschat-old-gemini-1-1/x/evil.sh", ".crosschat-deep-1-1/d/evil.sh"} {
		writeTestFile(t, filepath.Join(homes, rel), "planted")
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	ents, err := os.ReadDir(homes)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "gemini" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the worker's homes hold %v, want only gemini", names)
	}
}
