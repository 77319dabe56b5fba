package sandbox_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a confined run reads no relay credential in its CLI's settings:
// a settings file of the user's that holds an agent token (here in a
// server entry the filter drops, and in an env block it keeps) is given
// to the run's home as a copy, without the server entry and with every
// credential hidden, and the user's own file is out of the run's reach by
// its path; Claude Code's copied .claude.json the same. A file without any
// is still a link the run reads and cannot change. Before, the home
// linked the file and copied .claude.json as they were.
func TestCLIHomeSettingsWithoutCredentials(t *testing.T) {
	self := landlockSelf(t)
	const token = "cca_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	home, data, work, run := cliLayout(t)
	withToken := `{"env":{"X":"` + token + `"},"mcpServers":{"crosschat":{"headers":{"Authorization":"Bearer ` + token + `"}}}}`
	writeTestFile(t, filepath.Join(home, ".claude", "settings.json"), withToken)
	writeTestFile(t, filepath.Join(home, ".claude.json"), withToken)
	writeTestFile(t, filepath.Join(home, ".claude", "CLAUDE.md"), "plain")
	// A filter like the relay's: drops the "crosschat" entry.
	filter := func(preset, _, name string, b []byte) ([]byte, bool) {
		out := bytes.Replace(b, []byte(`"crosschat":{"headers":{"Authorization":"Bearer `+token+`"}}`), nil, 1)
		return out, !bytes.Equal(out, b)
	}
	script := try + `try read-copy grep -q "X" "$CLAUDE_CONFIG_DIR/settings.json"
try token-in-copy grep -q cca_ "$CLAUDE_CONFIG_DIR/settings.json"
try server-in-copy grep -q crosschat "$CLAUDE_CONFIG_DIR/settings.json"
try token-in-global grep -q cca_ "$CLAUDE_CONFIG_DIR/.claude.json"
try read-original cat "$HOME/.claude/settings.json"
try read-plain cat "$CLAUDE_CONFIG_DIR/CLAUDE.md"
try write-plain sh -c 'echo x >> "$CLAUDE_CONFIG_DIR/CLAUDE.md"'
`
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: "claude-code", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Args: []string{"-c", script},
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
	}
	w := sandbox.Wrapper{Self: self, Protected: []string{data}, Homes: filepath.Join(data, "cli-homes"), Settings: filter}
	got := runProbe(t, w, true, req)
	wantProbe(t, got, []string{"read-copy", "read-plain"}, "ok")
	wantProbe(t, got, []string{"token-in-copy", "server-in-copy", "token-in-global", "read-original", "write-plain"}, "denied")
	if s, err := w.Wrap(req); err != nil || strings.Contains(s.Log, filepath.Join(home, ".claude", "settings.json")) {
		t.Errorf("the rules name the user's settings file the run gets a copy of: %+v, %v", s, err)
	}
}

// Ensure a confined run gets what the filter makes of a settings file the
// user does not have: a Gemini run's home holds the filter's settings.json
// (the relay's filter puts the run's own server there, as Gemini reads no
// system settings file a user owns), and a file the filter makes nothing
// of stays absent. Before, a missing file was left missing whatever the
// filter gave.
func TestCLIHomeSettingsMadeWhenMissing(t *testing.T) {
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t) // the user has no Gemini folder
	filter := func(preset, server, name string, b []byte) ([]byte, bool) {
		if preset == "gemini" && name == "settings.json" && b == nil {
			return []byte(`{"made":"by-the-filter","server":"` + server + `"}`), true
		}
		return b, false
	}
	script := try + `try read-made grep -q by-the-filter "$GEMINI_CLI_HOME/.gemini/settings.json"
try named grep -q '"server":"crosschat-run-0a1b2c3d4e5f"' "$GEMINI_CLI_HOME/.gemini/settings.json"
try other-absent test ! -e "$GEMINI_CLI_HOME/.gemini/GEMINI.md"
`
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: "gemini", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Args: []string{"-c", script},
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
		Server: "crosschat-run-0a1b2c3d4e5f",
	}
	w := sandbox.Wrapper{Self: self, Protected: []string{data}, Homes: filepath.Join(data, "cli-homes"), Settings: filter}
	wantProbe(t, runProbe(t, w, true, req), []string{"read-made", "named", "other-absent"}, "ok")
}

// Ensure a settings file too large to look through for a relay credential
// is not given to the run: before, one over the bound was linked as it
// was, with whatever agent token it held (a hostile review).
func TestCLIHomeSettingsTooLargeNotGiven(t *testing.T) {
	self := landlockSelf(t)
	const token = "cca_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	home, data, work, run := cliLayout(t)
	large := `{"env":{"X":"` + token + `"},"pad":"` + strings.Repeat("x", 16<<20) + `"}`
	writeTestFile(t, filepath.Join(home, ".claude", "settings.json"), large)
	writeTestFile(t, filepath.Join(home, ".claude", "CLAUDE.md"), "plain")
	script := try + `try token-in-home grep -q cca_ "$CLAUDE_CONFIG_DIR/settings.json"
try read-original grep -q cca_ "$HOME/.claude/settings.json"
try read-plain cat "$CLAUDE_CONFIG_DIR/CLAUDE.md"
`
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: "claude-code", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Args: []string{"-c", script},
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
	}
	filter := func(_, _, _ string, b []byte) ([]byte, bool) { return b, false }
	w := sandbox.Wrapper{Self: self, Protected: []string{data}, Homes: filepath.Join(data, "cli-homes"), Settings: filter}
	got := runProbe(t, w, true, req)
	wantProbe(t, got, []string{"read-plain"}, "ok")
	wantProbe(t, got, []string{"token-in-home", "read-original"}, "denied")

	// Gemini's gets what the filter makes of nothing instead: the run's
	// own server.
	writeTestFile(t, filepath.Join(home, ".gemini", "settings.json"), large)
	req.Config.Harness = "gemini"
	req.Args = []string{"-c", try + `try made grep -q by-the-filter "$GEMINI_CLI_HOME/.gemini/settings.json"
try token-in-home grep -q cca_ "$GEMINI_CLI_HOME/.gemini/settings.json"
`}
	w.Settings = func(preset, _, name string, b []byte) ([]byte, bool) {
		if preset == "gemini" && name == "settings.json" && b == nil {
			return []byte(`{"made":"by-the-filter"}`), true
		}
		return b, false
	}
	got = runProbe(t, w, true, req)
	wantProbe(t, got, []string{"made"}, "ok")
	wantProbe(t, got, []string{"token-in-home"}, "denied")
}
