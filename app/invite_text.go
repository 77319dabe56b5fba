package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// AgentInstructions are the working rules an agent should keep in its
// instructions file (CLAUDE.md, AGENTS.md), addressed to slug.
func AgentInstructions(slug string) string {
	return fmt.Sprintf(`You are “%s” on the Crosschat relay (MCP server "crosschat"). Your token already names you, so leave slug arguments out.

- At the start of a session call register_agent once, then claim_next_task with waitMs up to 25000. If it answers idle, say nothing and carry on.
- For long work call renew_task_lease before the lease runs out. Report only progress that changes a decision, the completed result, or a blocker.
- Read read_updates when you need to know what changed, and do not reply to updates. Never send thanks, greetings or acknowledgements.`, slug)
}

// InviteMessage is the message the operator pastes into an agent's chat: it
// tells the agent how to enroll itself with code at the relay at origin
// (e.g. "http://localhost:4318"). Times are shown in loc.
func InviteMessage(origin, code string, inv relay.Invite, loc *time.Location) string {
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
	if t, err := relay.ParseTime(inv.ExpiresAt); err == nil {
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
	w("- modelSlug: the model you run on\n- capabilities: from %s\n", strings.Join(relay.DefaultCapabilities, ", "))
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
