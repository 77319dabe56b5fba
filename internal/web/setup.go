package web

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Setup holds ready-made client configurations for one token.
type Setup struct {
	ClaudeCode string `json:"claudeCode"`
	// ClaudeChannel is a project .mcp.json for a live Claude Code session:
	// one entry that starts `crosschat-relay channel`, which serves the
	// relay's tools and wakes the session with each task (a file, so the
	// token stays off command lines).
	ClaudeChannel string `json:"claudeChannel"`
	// ClaudeChannelStart is the command that starts Claude Code with that
	// channel loaded (ChannelStartCommand).
	ClaudeChannelStart string         `json:"claudeChannelStart"`
	Codex              string         `json:"codex"`
	JSON               map[string]any `json:"json"`
	Generic            string         `json:"generic"`
}

// ChannelStartCommand starts Claude Code with the crosschat channel of
// .mcp.json loaded, while Claude Code channels are a preview feature.
const ChannelStartCommand = "claude --dangerously-load-development-channels server:crosschat"

// ChannelMCPJSON is the .mcp.json that starts `crosschat-relay channel` for
// Claude Code with the agent's token and the relay's base URL, in the
// variables the channel command reads (CROSSCHAT_TOKEN, CROSSCHAT_URL).
func ChannelMCPJSON(token, baseURL string) string {
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"crosschat": map[string]any{
		"command": "crosschat-relay",
		"args":    []string{"channel"},
		"env":     map[string]string{"CROSSCHAT_TOKEN": token, "CROSSCHAT_URL": baseURL},
	}}}, "", "  ")
	return string(b)
}

// SetupFor returns the client configurations for mcpURL and token.
func SetupFor(mcpURL, token string) Setup {
	return Setup{
		ClaudeCode:         fmt.Sprintf(`claude mcp add --transport http crosschat %s --header "Authorization: Bearer %s"`, mcpURL, token),
		ClaudeChannel:      ChannelMCPJSON(token, strings.TrimSuffix(mcpURL, "/mcp")),
		ClaudeChannelStart: ChannelStartCommand,
		Codex:              fmt.Sprintf("export CROSSCHAT_TOKEN=%s\ncodex mcp add crosschat --url %s --bearer-token-env-var CROSSCHAT_TOKEN", token, mcpURL),
		// "type": "http" too: Claude Code skips an entry without a type
		// or command ("command: expected string").
		JSON: map[string]any{"mcpServers": map[string]any{"crosschat": map[string]any{
			"type":    "http",
			"url":     mcpURL,
			"headers": map[string]any{"Authorization": "Bearer " + token},
		}}},
		Generic: fmt.Sprintf(`Add a Streamable HTTP MCP server named "crosschat" at %s that sends the header "Authorization: Bearer %s".`, mcpURL, token),
	}
}

// JSONSnippet returns the JSON client configuration, indented.
func (s Setup) JSONSnippet() string {
	b, _ := json.MarshalIndent(s.JSON, "", "  ")
	return string(b)
}

// EnrollNext lists the steps an agent takes after enrolling.
func EnrollNext(e relay.Enrollment) []string {
	var next []string
	if e.Agent.OwnerSet.DisplayName {
		next = append(next, fmt.Sprintf("The relay owner named you “%s”; everyone sees this name.", e.Agent.DisplayName))
	}
	if e.Agent.OwnerSet.Details && e.Agent.Details != "" {
		next = append(next, "Your role, set by the relay owner: "+e.Agent.Details)
	}
	next = append(next,
		"Save the token now: it is shown only this once.",
		"Add the relay to your MCP client with the matching entry of setup (claudeCode, codex, json or generic; claudeChannel is a project .mcp.json that also wakes a live Claude Code session with each task, started with claudeChannelStart); ask the user to restart the client if it needs that.",
		"Call whoami to confirm you are connected as “"+e.Agent.Slug+"”.",
	)
	if e.AssignedTask != nil {
		next = append(next, fmt.Sprintf("A first task is waiting for you: “%s”. After whoami, call claim_next_task to take it.", e.AssignedTask.Title))
	}
	next = append(next, "Follow the working rules from the invite message and save them in your instructions file (CLAUDE.md or AGENTS.md).")
	return next
}
