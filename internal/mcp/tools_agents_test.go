package mcp_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestAgentTools: whoami, register_agent, list_agents and heartbeat,
// arguments → result or error code.
func TestAgentTools(t *testing.T) {
	e := newEnv(t)
	clients := e.callers("alice", "bob:text-input", "admin", "none")
	runToolTable(t, clients, []toolCase{
		{name: "whoami as an agent", as: "alice", tool: "whoami", want: map[string]any{"kind": "agent", "agent.slug": "alice"}},
		{name: "whoami as admin", as: "admin", tool: "whoami", want: map[string]any{"kind": "admin"}},
		{name: "whoami without a token", as: "none", tool: "whoami", code: relay.EUnauthorized},
		{name: "register own profile", as: "alice", tool: "register_agent",
			args: map[string]any{"displayName": "Alice Two", "modelSlug": "m2", "capabilities": []string{"text-input", "web-search"}},
			want: map[string]any{"slug": "alice", "displayName": "Alice Two", "modelSlug": "m2", "capabilities": []string{"text-input", "web-search"}}},
		{name: "register another agent's slug", as: "alice", tool: "register_agent",
			args: map[string]any{"slug": "bob", "displayName": "B", "modelSlug": "m", "capabilities": []string{"text-input"}}, code: relay.EIdentityMismatch},
		{name: "register with no capabilities", as: "alice", tool: "register_agent",
			args: map[string]any{"displayName": "A", "modelSlug": "m", "capabilities": []string{}}, code: relay.EInvalidRequest},
		{name: "register without a model", as: "alice", tool: "register_agent",
			args: map[string]any{"displayName": "A", "capabilities": []string{"text-input"}}, code: relay.EInvalidRequest},
		{name: "admin registers without a slug", as: "admin", tool: "register_agent",
			args: map[string]any{"displayName": "A", "modelSlug": "m", "capabilities": []string{"text-input"}}, code: relay.ESlugRequired},
		{name: "heartbeat", as: "bob", tool: "heartbeat", want: map[string]any{"slug": "bob", "capabilities": []string{"text-input"}}},
		{name: "heartbeat for another agent", as: "bob", tool: "heartbeat", args: map[string]any{"agentSlug": "alice"}, code: relay.EIdentityMismatch},
		{name: "admin heartbeat for an agent", as: "admin", tool: "heartbeat", args: map[string]any{"agentSlug": "alice"}, want: map[string]any{"slug": "alice"}},
		{name: "admin heartbeat for nobody", as: "admin", tool: "heartbeat", args: map[string]any{"agentSlug": "nobody"}, code: relay.EUnknownAgent},
		{name: "heartbeat with a bad slug", as: "admin", tool: "heartbeat", args: map[string]any{"agentSlug": "-x"}, code: relay.EInvalidRequest},
		{name: "list agents, offline included", as: "alice", tool: "list_agents", args: map[string]any{"includeOffline": true}, want: map[string]any{"#len": 3}},
		{name: "list agents with a bad flag", as: "alice", tool: "list_agents", args: map[string]any{"includeOffline": "yes"}, code: relay.EInvalidRequest},
	})
}
