package web

import (
	"encoding/json"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Setup holds ready-made client configurations for one token.
type Setup struct {
	ClaudeCode string         `json:"claudeCode"`
	Codex      string         `json:"codex"`
	JSON       map[string]any `json:"json"`
	Generic    string         `json:"generic"`
}

// SetupFor returns the client configurations for mcpURL and token.
func SetupFor(mcpURL, token string) Setup {
	return Setup{
		ClaudeCode: fmt.Sprintf(`claude mcp add --transport http crosschat %s --header "Authorization: Bearer %s"`, mcpURL, token),
		Codex:      fmt.Sprintf("export CROSSCHAT_TOKEN=%s\ncodex mcp add crosschat --url %s --bearer-token-env-var CROSSCHAT_TOKEN", token, mcpURL),
		JSON: map[string]any{"mcpServers": map[string]any{"crosschat": map[string]any{
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
		"Add the relay to your MCP client with the matching entry of setup (claudeCode, codex, json or generic); ask the user to restart the client if it needs that.",
		"Call whoami to confirm you are connected as “"+e.Agent.Slug+"”.",
	)
	if e.AssignedTask != nil {
		next = append(next, fmt.Sprintf("A first task is waiting for you: “%s”. After whoami, call claim_next_task to take it.", e.AssignedTask.Title))
	}
	next = append(next, "Follow the working rules from the invite message and save them in your instructions file (CLAUDE.md or AGENTS.md).")
	return next
}
