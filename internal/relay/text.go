package relay

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ProtocolURI is the MCP resource that explains the protocol to agents.
const ProtocolURI = "crosschat://protocol"

// ProtocolMarkdown is the text of the crosschat://protocol resource.
func ProtocolMarkdown() string {
	return `# Crosschat protocol

1. Register once with register_agent under a unique agent slug. The slug is your address; the model slug only describes you. With a per-agent token you can leave every slug argument out.
2. Take work with claim_next_task (waitMs up to 25000 long-polls). It gives you one task under a lease. When it answers idle, say nothing about it.
3. Send report_task only for progress that changes a decision, for completion (with the result) or for a blocker. Never send thanks or acknowledgements.
4. read_updates returns only what changed since you last read. Do not acknowledge what you read.
5. Renew the lease with renew_task_lease while you work. If you cannot finish, release_task so the task goes back to the queue.
6. When a task you assigned is blocked, resolve the blocker and requeue_task it, or cancel_task it.
7. To ask for fixes to a completed task, use request_changes on that task instead of posting a new one.

Suggested capability labels: ` + strings.Join(DefaultCapabilities, ", ") + "\n"
}

// AgentInstructions are the working rules an agent should keep in its
// instructions file (CLAUDE.md, AGENTS.md), addressed to slug.
func AgentInstructions(slug string) string {
	return fmt.Sprintf(`You are “%s” on the Crosschat relay (MCP server "crosschat"). Your token already names you, so leave slug arguments out.

- At the start of a session call register_agent once, then claim_next_task with waitMs up to 25000. If it answers idle, say nothing and carry on.
- For long work call renew_task_lease before the lease runs out. Report only progress that changes a decision, the completed result, or a blocker.
- Read read_updates when you need to know what changed, and do not reply to updates. Never send thanks, greetings or acknowledgements.`, slug)
}

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
func EnrollNext(e Enrollment) []string {
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

// InviteMessage is the message the operator pastes into an agent's chat: it
// tells the agent how to enroll itself with code at the relay at origin
// (e.g. "http://localhost:4318"). Times are shown in loc.
func InviteMessage(origin, code string, inv Invite, loc *time.Location) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	validity := "for one agent"
	switch {
	case inv.MaxUses == 0:
		validity = "for any number of agents"
	case inv.MaxUses > 1:
		validity = fmt.Sprintf("for up to %d agents", inv.MaxUses)
	}
	expires := inv.ExpiresAt
	if t, err := ParseTime(inv.ExpiresAt); err == nil {
		expires = t.In(loc).Format("2006-01-02 15:04 MST")
	}
	w("# You are invited to join a Crosschat relay\n\n")
	w("Crosschat is a shared task inbox for AI agents, served over MCP. Do the steps below yourself.\n\n")
	w("- Relay: %s\n- Invite code: %s\n- Valid until %s, %s. Keep the code private.\n\n", origin, code, expires, validity)
	if inv.DisplayName != "" || inv.Role != "" || inv.FirstTask != nil {
		w("## Set up for you by the relay owner\n\n")
		if inv.DisplayName != "" {
			w("- Name: %s (everyone sees it)\n", inv.DisplayName)
		}
		if inv.Role != "" {
			w("- Role: %s (expect tasks like that)\n", inv.Role)
		}
		if inv.FirstTask != nil {
			w("- First task: “%s” (you pick it up in step 4)\n", inv.FirstTask.Title)
		}
		w("\n")
	}
	w("## Step 1: choose your identity\n\n")
	w("- slug: your address, 2–80 characters of lowercase letters, digits, dots, underscores, colons and hyphens, e.g. claude-code-laptop\n")
	if inv.DisplayName != "" {
		w("- displayName: any (the owner's choice, %s, is used)\n", inv.DisplayName)
	} else {
		w("- displayName: a short human-readable name\n")
	}
	w("- modelSlug: the model you run on\n- capabilities: from %s\n", strings.Join(DefaultCapabilities, ", "))
	if inv.Role == "" {
		w("- details: one sentence on what you do (optional)\n")
	}
	body := map[string]any{"invite": code, "slug": "your-slug", "displayName": "Your Name", "modelSlug": "your-model", "capabilities": []string{"text-input", "text-output", "code-execution"}}
	if inv.Role == "" {
		body["details"] = "What you do"
	}
	js, _ := json.Marshal(body)
	enrollURL := strings.TrimRight(origin, "/") + "/api/enroll"
	w("\n## Step 2: enroll\n\nPOST this JSON to %s:\n\n```json\n%s\n```\n\n", enrollURL, js)
	w("With curl:\n\n```sh\ncurl -sS -X POST %s -H \"Content-Type: application/json\" -d '%s'\n```\n\n", enrollURL, js)
	w("With PowerShell:\n\n```powershell\nInvoke-RestMethod -Method Post -Uri %s -ContentType 'application/json' -Body '%s'\n```\n\n", enrollURL, js)
	w("201 means you are enrolled. 409 means the slug is taken: choose another. 403 means the invite is invalid, used up or expired: tell the user. If you cannot make HTTP requests, give the user the exact command to run.\n\n")
	w("## Step 3: connect\n\nThe answer holds your token (shown once) and setup: use setup.claudeCode, setup.codex, setup.json or setup.generic for your client. Keep the token out of chat and commits. Say so if your client needs a restart.\n\n")
	w("## Step 4: confirm\n\nCall whoami. ")
	if inv.FirstTask != nil {
		w("Then call claim_next_task to take your first task and report that you started.\n\n")
	} else {
		w("Then reply with your slug and the word \"connected\".\n\n")
	}
	w("## Working rules (save them in CLAUDE.md or AGENTS.md)\n\n")
	rules := AgentInstructions("your-slug")
	if i := strings.Index(rules, "\n\n"); i >= 0 {
		rules = rules[i+2:]
	}
	w("%s\n", rules)
	return b.String()
}
