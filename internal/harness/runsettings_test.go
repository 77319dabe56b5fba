package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Ensure what a worker run gets of the user's settings holds no agent token
// and none of the relay's servers: the files the real one-step Connect
// writes (Claude Code's .claude.json, Codex's config.toml, Gemini CLI's
// settings.json) lose the "crosschat" server, a server entry holding a
// relay token under another name (also one a project keeps in
// .claude.json) goes too, the user's other servers and settings stay (but
// for Codex, whose run gets no MCP server of the user's at all), and a
// file without any is given as it is.
func TestRunSettings(t *testing.T) {
	home := t.TempDir()
	env := harness.Env{Home: home}
	const token = "cca_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	files := map[string]string{harness.ClaudeCode: ".claude.json", harness.Codex: ".codex/config.toml", harness.Gemini: ".gemini/settings.json"}
	seed := map[string]string{
		harness.ClaudeCode: `{"theme":"dark","mcpServers":{"tools":{"command":"/bin/tools"}},"projects":{"/w":{"mcpServers":{"mine":{"type":"http","url":"http://x","headers":{"Authorization":"Bearer ` + token + `"}},"docs":{"command":"docs"}}}}}`,
		harness.Codex:      "model = \"gpt-5\"\n\n[mcp_servers.tools]\ncommand = \"/bin/tools\"\n",
		harness.Gemini:     `{"ui":{"theme":"x"},"mcpServers":{"tools":{"command":"/bin/tools"}}}`,
	}
	for preset, rel := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(seed[preset]), 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := harness.Connect(context.Background(), preset, env, "http://127.0.0.1:4318/mcp", token); err != nil || !c.Configured {
			t.Fatalf("connect %s: %+v, %v", preset, c, err)
		}
	}
	for preset, rel := range files {
		t.Run(preset, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(home, rel))
			if err != nil || !strings.Contains(string(data), token) {
				t.Fatalf("Connect wrote no token: %s, %v", data, err)
			}
			out, changed := harness.RunSettings(preset, "", filepath.Base(rel), data)
			got := string(out)
			if !changed || strings.Contains(got, "cca_") || strings.Contains(got, `"crosschat"`) || strings.Contains(got, "mcp_servers.crosschat") {
				t.Fatalf("changed %v:\n%s", changed, got)
			}
			keep := map[string][]string{
				harness.ClaudeCode: {`"theme": "dark"`, `"tools"`, `"docs"`},
				harness.Codex:      {`model = "gpt-5"`},
				harness.Gemini:     {`"theme": "x"`, `"tools"`},
			}[preset]
			for _, k := range keep {
				if !strings.Contains(got, k) {
					t.Errorf("lost %s:\n%s", k, got)
				}
			}
			if preset == harness.ClaudeCode && strings.Contains(got, `"mine"`) {
				t.Errorf("a project's server holding a token stayed:\n%s", got)
			}
			if preset == harness.Codex && strings.Contains(got, "mcp_servers") {
				t.Errorf("a Codex run's copy keeps the user's servers:\n%s", got)
			}
		})
	}
	if out, changed := harness.RunSettings(harness.ClaudeCode, "", "settings.json", []byte(`{"ui":{}}`)); changed || string(out) != `{"ui":{}}` {
		t.Errorf("a file without the relay's servers: %v %s", changed, out)
	}
}

// TestGeminiRunSettingsHoldTheRunServer: a Gemini run's settings.json
// carries the run's own server (Gemini reads no system settings file a
// user owns), naming its URL and token by the run's environment, beside
// what the user's file keeps, and is made when the user has none; a file
// that is not a plain JSON object is left as it is.
func TestGeminiRunSettingsHoldTheRunServer(t *testing.T) {
	const server = runspec.RunServer + "-a1b2c3d4e5f6" // the run's own name (runspec.Request's Server)
	const token = "cca_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	cases := []struct {
		name, in string
		changed  bool
		want     []string
		not      []string
	}{
		{"no file", "", true, []string{`"crosschat-run-a1b2c3d4e5f6"`}, nil},
		{"the user's settings", `{"ui":{"theme":"x"},"mcpServers":{"tools":{"command":"/bin/tools"}}}`, true,
			[]string{`"crosschat-run-a1b2c3d4e5f6"`, `"theme": "x"`, `"tools"`}, nil},
		{"the user's relay server", `{"mcpServers":{"crosschat":{"httpUrl":"http://x/mcp","headers":{"Authorization":"Bearer ` + token + `"}}}}`, true,
			[]string{`"crosschat-run-a1b2c3d4e5f6"`}, []string{`"crosschat"`, "cca_"}},
		{"a stale run server", `{"mcpServers":{"crosschat-run-0123456789ab":{"httpUrl":"http://elsewhere/mcp"}}}`, true,
			[]string{`"crosschat-run-a1b2c3d4e5f6"`}, nil},
		// Gemini reads comments (strip-json-comments); before, such a file
		// was given as it was, and the run had no relay tools.
		{"comments", "// mine\n{\"ui\":{\"a\":\"http://x//y /* z */\"} /* two\nlines */}", true,
			[]string{`"crosschat-run-a1b2c3d4e5f6"`, `"http://x//y /* z */"`}, []string{"mine", "two"}},
		// Gemini (JSON.parse) takes a repeated key's last value; before,
		// the run's server went into the first, and the last was read.
		{"a repeated server", `{"mcpServers":{"crosschat-run-a1b2c3d4e5f6":{"httpUrl":"http://a/mcp"},"crosschat-run-a1b2c3d4e5f6":{"httpUrl":"https://evil.example/mcp"}}}`, true,
			[]string{`"crosschat-run-a1b2c3d4e5f6"`}, []string{"evil", "http://a/"}},
		{"repeated servers", `{"mcpServers":{},"mcpServers":{"tools":{"command":"/bin/tools"}}}`, true,
			[]string{`"crosschat-run-a1b2c3d4e5f6"`, `"tools"`}, nil},
		{"not an object", `[1]`, false, []string{`[1]`}, []string{`"crosschat-run-a1b2c3d4e5f6"`}},
		{"servers not an object", `{"mcpServers":[],"ui":{}}`, true, []string{`"crosschat-run-a1b2c3d4e5f6"`, `"ui"`}, nil},
		{"servers null", `{"mcpServers":null}`, true, []string{`"crosschat-run-a1b2c3d4e5f6"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in []byte
			if c.in != "" {
				in = []byte(c.in)
			}
			out, changed := harness.RunSettings(harness.Gemini, server, "settings.json", in)
			got := string(out)
			if changed != c.changed {
				t.Errorf("changed = %v, want %v:\n%s", changed, c.changed, got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %s:\n%s", w, got)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("holds %s:\n%s", n, got)
				}
			}
			if !c.changed {
				return
			}
			checkRunServer(t, out, server)
		})
	}
}

// Fuzz a Gemini run's copy of the user's settings.json, a file the relay
// does not write: it is given as it was, or it is JSON in which the run's
// own server is exactly the relay's, as Gemini reads it (a repeated key's
// last value).
func FuzzGeminiRunSettings(f *testing.F) {
	for _, s := range []string{"", "{}", "// c\n{}", `{"mcpServers":{"a":{}},"mcpServers":null}`, "/*", `{"a":"\"//"} // x`,
		`{"mcpServers":{"crosschat-run-a1b2c3d4e5f6":{"httpUrl":"x"},"crosschat-run-a1b2c3d4e5f6":{"httpUrl":"y"}}}`} {
		f.Add(s)
	}
	const server = runspec.RunServer + "-a1b2c3d4e5f6"
	f.Fuzz(func(t *testing.T, in string) {
		out, changed := harness.RunSettings(harness.Gemini, server, "settings.json", []byte(in))
		if !changed {
			if string(out) != in {
				t.Fatalf("unchanged, yet not the input:\n%s", out)
			}
			return
		}
		checkRunServer(t, out, server)
	})
}

// checkRunServer fails t unless out is JSON whose mcpServers hold server
// as exactly the run's own, read as Gemini reads it (a repeated key's last
// value, as encoding/json takes it too).
func checkRunServer(t *testing.T, out []byte, server string) {
	t.Helper()
	var v struct {
		MCPServers map[string]struct {
			HTTPURL string            `json:"httpUrl"`
			Headers map[string]string `json:"headers"`
			Trust   bool              `json:"trust"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("the copy is not JSON: %v\n%s", err, out)
	}
	s := v.MCPServers[server]
	if s.HTTPURL != "${CROSSCHAT_MCP_URL}" || s.Headers["Authorization"] != "Bearer ${CROSSCHAT_TOKEN}" || len(s.Headers) != 1 || !s.Trust {
		t.Fatalf("the run's server reads as %+v:\n%s", s, out)
	}
}
