package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
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
				home, data, work, run, _ := layout(t)
				for rel, body := range userCLIFiles {
					writeTestFile(t, filepath.Join(home, rel), body)
				}
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
