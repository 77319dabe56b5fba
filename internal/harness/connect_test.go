package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
)

const (
	testURL   = "http://127.0.0.1:4318/mcp"
	testToken = "cca_secret"
)

// seed writes a settings file as a person left it (0644, in a 0700 folder);
// an empty text writes nothing.
func seed(t *testing.T, file, text string) {
	t.Helper()
	if text == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Ensure each JSON settings writer merges the relay into the tool's file,
// keeping other servers and keys in order, backs the old file up, and
// leaves files it can't edit safely alone with a snippet.
func TestConnectJSON(t *testing.T) {
	for _, tc := range []struct {
		name, preset, file, before string
		configured                 bool
	}{
		{"gemini-new", harness.Gemini, ".gemini/settings.json", "", true},
		{"gemini-merge", harness.Gemini, ".gemini/settings.json", `{"theme":"dark","mcpServers":{"other":{"command":"x","args":["a"]},"crosschat":{"url":"old"}},"security":{"auth":{"selectedType":"gemini-api-key"}},"n":1.50}`, true},
		{"gemini-comments", harness.Gemini, ".gemini/settings.json", "{\n  // my settings\n  \"theme\": \"dark\"\n}\n", false},
		{"gemini-not-object", harness.Gemini, ".gemini/settings.json", `["x"]`, false},
		{"gemini-servers-not-object", harness.Gemini, ".gemini/settings.json", `{"mcpServers":"none"}`, false},
		{"zcode", harness.ZCode, ".zcode/cli/config.json", `{"model":"glm","mcp":{"servers":{"files":{"type":"stdio"}}}}`, true},
		{"codewhale", harness.Codewhale, ".codewhale/mcp.json", `{"servers":{}}`, true},
		{"cursor", harness.Cursor, ".cursor/mcp.json", "  \n", true},
		{"opencode", harness.OpenCode, ".config/opencode/opencode.json", `{"x":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			file := filepath.Join(home, filepath.FromSlash(tc.file))
			seed(t, file, tc.before)
			c, err := harness.Connect(context.Background(), tc.preset, harness.Env{Home: home, GOOS: "linux"}, testURL, testToken)
			if err != nil {
				t.Fatal(err)
			}
			if c.Configured != tc.configured || c.File != file || c.Message == "" {
				t.Fatalf("connection = %+v", c)
			}
			after := ""
			if _, err := os.Stat(file); err == nil {
				after = readFile(t, file)
			}
			if !tc.configured {
				if after != tc.before || !strings.Contains(c.Snippet, testToken) {
					t.Errorf("file changed to %q or snippet %q lacks the token", after, c.Snippet)
				}
				if _, err := os.Stat(file + ".bak"); err == nil {
					t.Error("backup written for an untouched file")
				}
			} else {
				if mode(t, file) != 0o600 {
					t.Errorf("mode %v, want 0600", mode(t, file))
				}
				if tc.before != "" {
					if got := readFile(t, file+".bak"); got != tc.before {
						t.Errorf("backup = %q, want %q", got, tc.before)
					}
				} else if _, err := os.Stat(file + ".bak"); err == nil {
					t.Error("backup of a file that did not exist")
				}
			}
			golden(t, "connect/"+tc.name+".golden", []byte(strings.ReplaceAll(fmt.Sprintf("## connection\n%s## file\n%s", mustJSON(t, c), after), home, "$HOME")))
		})
	}
}

// Ensure Codewhale falls back to ~/.deepseek when only that folder exists.
func TestConnectCodewhaleDeepseek(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".deepseek"), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := harness.Connect(context.Background(), harness.Codewhale, harness.Env{Home: home, GOOS: "linux"}, testURL, testToken)
	if err != nil || !c.Configured || c.File != filepath.Join(home, ".deepseek", "mcp.json") {
		t.Fatalf("connection %+v, %v", c, err)
	}
}

// Ensure the Codex table replacement keeps other tables, drops the old
// crosschat table and its subtables, appends to empty text, and refuses
// TOML it can't read or that defines the server elsewhere.
func TestConnectCodex(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		configured   bool
	}{
		{"codex-new", "", true},
		{"codex-replace", `model = "gpt-5" # the default
approval_policy = "on-request"

[mcp_servers.crosschat]
url = "http://old/mcp"
bearer_token_env_var = "CROSSCHAT_TOKEN"

[mcp_servers.crosschat.tools.slow]
approval_mode = "approve"

[mcp_servers.crosschatter]
command = "x"

[mcp_servers."crosschat".env]
A = "1"

[profiles.fast]
model = "o4"
notes = """
[mcp_servers.crosschat]
not a table
"""
list = [
  "a",
  "b",
]

[[history]]
x = 1
`, true},
		{"codex-bad-toml", "model = \nthis is not toml\n", false},
		{"codex-dotted", "mcp_servers.crosschat.url = \"http://x\"\n", false},
		{"codex-inline", "[mcp_servers]\ncrosschat = { url = \"http://x\" }\n", false},
		{"codex-unterminated", "notes = \"\"\"\nnever closed\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			file := filepath.Join(home, ".codex", "config.toml")
			seed(t, file, tc.before)
			c, err := harness.Connect(context.Background(), harness.Codex, harness.Env{Home: home, GOOS: "linux"}, testURL, testToken)
			if err != nil {
				t.Fatal(err)
			}
			if c.Configured != tc.configured || c.File != file {
				t.Fatalf("connection = %+v", c)
			}
			after := ""
			if _, err := os.Stat(file); err == nil {
				after = readFile(t, file)
			}
			if tc.configured {
				if strings.Count(after, "[mcp_servers.crosschat]\nurl") != 1 || strings.Contains(after, "http://old") || strings.Contains(after, "crosschat.tools") || strings.Contains(after, `"crosschat".env`) {
					t.Errorf("old table kept:\n%s", after)
				}
				if !strings.Contains(after, `http_headers = { Authorization = "Bearer cca_secret" }`) || !strings.Contains(after, `default_tools_approval_mode = "approve"`) {
					t.Errorf("new table missing:\n%s", after)
				}
				for _, keep := range []string{"[profiles.fast]", "[mcp_servers.crosschatter]", "[[history]]", "not a table", `model = "gpt-5" # the default`} {
					if tc.before != "" && !strings.Contains(after, keep) {
						t.Errorf("lost %q:\n%s", keep, after)
					}
				}
			} else if after != tc.before || !strings.Contains(c.Snippet, "[mcp_servers.crosschat]") {
				t.Errorf("file changed or no snippet: %+v", c)
			}
			golden(t, "connect/"+tc.name+".golden", []byte(strings.ReplaceAll(fmt.Sprintf("## connection\n%s## file\n%s", mustJSON(t, c), after), home, "$HOME")))
		})
	}
}

// Ensure TOML strings escape backslashes and quotes.
func TestReplaceTOMLTableEscapes(t *testing.T) {
	got, err := harness.ReplaceTOMLTable("", "a.b", "[a.b]\nx = 1\n")
	if err != nil || got != "[a.b]\nx = 1\n" {
		t.Fatalf("empty text: %q, %v", got, err)
	}
	home := t.TempDir()
	if _, err := harness.Connect(context.Background(), harness.Codex, harness.Env{Home: home, GOOS: "linux"}, `http://h/"q"\p`, "t"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(home, ".codex", "config.toml")); !strings.Contains(got, `url = "http://h/\"q\"\\p"`) {
		t.Errorf("url not escaped:\n%s", got)
	}
}

// TestConnectClaudeKeepsTokenOffCommandLine: the one-step Connect for
// Claude Code runs no program with the agent's token in its arguments
// (every user of the computer can read them); it writes the user-scope
// server into ~/.claude.json (0600), keeping the file's other settings.
func TestConnectClaudeKeepsTokenOffCommandLine(t *testing.T) {
	dir := t.TempDir()
	claude := filepath.Join(dir, "claude")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ".claude.json")
	if err := os.WriteFile(file, []byte(`{"hasCompletedOnboarding":true,"mcpServers":{"other":{"type":"stdio","command":"x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls []string
	env := harness.Env{PATH: dir, Home: dir, GOOS: "linux", Run: func(ctx context.Context, program string, args ...string) ([]byte, error) {
		calls = append(calls, program+" "+strings.Join(args, " "))
		return nil, nil
	}}
	c, err := harness.Connect(context.Background(), harness.ClaudeCode, env, testURL, testToken)
	if err != nil || !c.Configured || c.File != file {
		t.Fatalf("connection %+v, %v", c, err)
	}
	for _, call := range calls {
		if strings.Contains(call, testToken) {
			t.Fatalf("the token is on a command line: %s", call)
		}
	}
	got := readFile(t, file)
	for _, want := range []string{`"hasCompletedOnboarding": true`, `"other"`, `"crosschat"`, `"type": "http"`, `"url": "` + testURL + `"`, `"Authorization": "Bearer ` + testToken + `"`} {
		if !strings.Contains(got, want) {
			t.Errorf("~/.claude.json lacks %s:\n%s", want, got)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("~/.claude.json mode %v, %v", fi.Mode(), err)
	}
	// Run again: the entry is replaced, not duplicated.
	if _, err := harness.Connect(context.Background(), harness.ClaudeCode, env, testURL, testToken); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(readFile(t, file), `"crosschat"`); n != 1 {
		t.Errorf("%d crosschat entries", n)
	}
	// A file that is not plain JSON is left alone; the snippet is JSON, not a command.
	if err := os.WriteFile(file, []byte("{ // comment\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = harness.Connect(context.Background(), harness.ClaudeCode, env, testURL, testToken)
	if err != nil || c.Configured || !strings.Contains(c.Snippet, `"mcpServers"`) || strings.Contains(c.Snippet, "claude mcp add") {
		t.Errorf("commented file: %+v, %v", c, err)
	}
	if _, err := harness.Connect(context.Background(), "nope", env, testURL, testToken); err == nil {
		t.Error("unknown preset: no error")
	}
	if c, err := harness.Connect(context.Background(), harness.Custom, env, testURL, testToken); err != nil || c.Configured || !strings.Contains(c.Snippet, `"mcpServers"`) {
		t.Errorf("custom: %+v, %v", c, err)
	}
}

// TestConnectFollowsMovedFolders: with CLAUDE_CONFIG_DIR or CODEX_HOME set,
// the CLIs read their settings there, so Connect writes them there and
// leaves the home folder's defaults alone.
func TestConnectFollowsMovedFolders(t *testing.T) {
	for _, tc := range []struct {
		preset        string
		env           func(home, moved string) harness.Env
		want, notWant func(home, moved string) string
	}{
		{harness.ClaudeCode,
			func(home, moved string) harness.Env { return harness.Env{Home: home, GOOS: "linux", ClaudeDir: moved} },
			func(_, moved string) string { return filepath.Join(moved, ".claude.json") },
			func(home, _ string) string { return filepath.Join(home, ".claude.json") }},
		{harness.Codex,
			func(home, moved string) harness.Env { return harness.Env{Home: home, GOOS: "linux", CodexDir: moved} },
			func(_, moved string) string { return filepath.Join(moved, "config.toml") },
			func(home, _ string) string { return filepath.Join(home, ".codex", "config.toml") }},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			home, moved := t.TempDir(), t.TempDir()
			c, err := harness.Connect(context.Background(), tc.preset, tc.env(home, moved), testURL, testToken)
			if err != nil || !c.Configured || c.File != tc.want(home, moved) {
				t.Fatalf("connection %+v, %v; want the file %s", c, err, tc.want(home, moved))
			}
			if got := readFile(t, c.File); !strings.Contains(got, testURL) || !strings.Contains(got, "Bearer "+testToken) {
				t.Errorf("%s lacks the server:\n%s", c.File, got)
			}
			if _, err := os.Stat(tc.notWant(home, moved)); !os.IsNotExist(err) {
				t.Errorf("%s was written too (%v)", tc.notWant(home, moved), err)
			}
		})
	}
}

// TestSystemEnvReadsMovedFolders: the relay's own environment says where
// the CLIs keep their folders.
func TestSystemEnvReadsMovedFolders(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "/srv/claude")
	t.Setenv("CODEX_HOME", "/srv/codex")
	if e := harness.SystemEnv(); e.ClaudeDir != "/srv/claude" || e.CodexDir != "/srv/codex" {
		t.Errorf("SystemEnv = ClaudeDir %q, CodexDir %q", e.ClaudeDir, e.CodexDir)
	}
}
