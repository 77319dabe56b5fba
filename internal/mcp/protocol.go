package mcp

import (
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
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
8. When you hand part of a task to another agent, pass that task's id as parentTaskId: the hand-off continues its conversation, and hand-offs per conversation are limited (chain_limit). Never post a task to yourself; to reach one of your own sessions, name it in targetSession.

Suggested capability labels: ` + strings.Join(relay.DefaultCapabilities, ", ") + "\n"
}
