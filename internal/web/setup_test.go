package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Ensure the setup snippets and the enroll steps carry what an agent needs.
func TestSetupTexts(t *testing.T) {
	s := web.SetupFor("http://localhost:4318/mcp", "cca_x")
	if !strings.Contains(s.ClaudeCode, `--header "Authorization: Bearer cca_x"`) || !strings.Contains(s.Codex, "--bearer-token-env-var CROSSCHAT_TOKEN") {
		t.Fatalf("setup %+v", s)
	}
	// The JSON clients' entry: Claude Code's .mcp.json skips one without a
	// type ("command: expected string"); others take it as it is.
	var js struct {
		MCPServers map[string]struct {
			Type, URL string
			Headers   map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(s.JSONSnippet()), &js); err != nil {
		t.Fatal(err)
	}
	if e := js.MCPServers["crosschat"]; e.Type != "http" || e.URL != "http://localhost:4318/mcp" || e.Headers["Authorization"] != "Bearer cca_x" {
		t.Fatalf("JSON entry %+v", e)
	}
	// The live-session setup: one .mcp.json entry for `crosschat-relay
	// channel` with the token in its env (not on a command line), and the
	// command that loads it.
	var ch struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(s.ClaudeChannel), &ch); err != nil {
		t.Fatalf("claudeChannel is not JSON: %v\n%s", err, s.ClaudeChannel)
	}
	entry, found := ch.MCPServers["crosschat"]
	if !found || len(ch.MCPServers) != 1 || entry.Command != "crosschat-relay" || strings.Join(entry.Args, " ") != "channel" ||
		entry.Env["CROSSCHAT_TOKEN"] != "cca_x" || entry.Env["CROSSCHAT_URL"] != "http://localhost:4318" {
		t.Fatalf("claudeChannel %s", s.ClaudeChannel)
	}
	if s.ClaudeChannelStart != "claude --dangerously-load-development-channels server:crosschat" || strings.Contains(s.ClaudeChannelStart, "cca_") {
		t.Fatalf("claudeChannelStart %q", s.ClaudeChannelStart)
	}
	next := web.EnrollNext(relay.Enrollment{Agent: relay.Agent{Slug: "a1", DisplayName: "Ada", OwnerSet: relay.OwnerSet{DisplayName: true}}, AssignedTask: &relay.AssignedTask{Title: "Say hi"}})
	joined := strings.Join(next, "\n")
	if !strings.Contains(joined, "Ada") || !strings.Contains(joined, "claim_next_task") || !strings.Contains(joined, "whoami") {
		t.Fatalf("next %v", next)
	}
}
