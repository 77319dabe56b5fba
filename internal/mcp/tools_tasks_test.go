package mcp_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestTaskTools walks one task through every task tool, with the refusals
// each step has, arguments → result or error code.
func TestTaskTools(t *testing.T) {
	e := newEnv(t)
	clients := e.callers("alice", "bob:text-input", "carol", "admin")
	post := map[string]any{"recipientSlug": "bob", "title": "Write", "instructions": "Write it."}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{k: v}
		for key, val := range m {
			if key != k {
				out[key] = val
			}
		}
		return out
	}
	runToolTable(t, clients, []toolCase{
		{name: "post", as: "alice", tool: "post_task", args: with(post, "priority", 3), save: "t",
			want: map[string]any{"status": "queued", "senderSlug": "alice", "recipientSlug": "bob", "priority": 3, "reports#len": 0, "requiredCapabilities": []string{}}},
		{name: "post to nobody", as: "alice", tool: "post_task", args: with(post, "recipientSlug", "nobody"), code: relay.EUnknownAgent},
		{name: "post needing a capability the recipient lacks", as: "alice", tool: "post_task",
			args: with(post, "requiredCapabilities", []string{"web-search"}), code: relay.ERecipientLacksCapability},
		{name: "post with priority 4", as: "alice", tool: "post_task", args: with(post, "priority", 4), code: relay.EInvalidRequest},
		{name: "post without a title", as: "alice", tool: "post_task", args: with(post, "title", ""), code: relay.EInvalidRequest},
		{name: "post as someone else", as: "alice", tool: "post_task", args: with(post, "senderSlug", "carol"), code: relay.EIdentityMismatch},
		{name: "get as recipient", as: "bob", tool: "get_task", args: map[string]any{"taskId": "$t"}, want: map[string]any{"status": "queued", "title": "Write"}},
		{name: "get as a stranger", as: "carol", tool: "get_task", args: map[string]any{"taskId": "$t"}, code: relay.ETaskAccessDenied},
		{name: "get with a bad id", as: "bob", tool: "get_task", args: map[string]any{"taskId": "not-a-uuid"}, code: relay.EInvalidRequest},
		{name: "report before the claim", as: "bob", tool: "report_task", args: map[string]any{"taskId": "$t", "kind": "progress", "message": "hi"}, code: relay.ETaskUpdateDenied},
		{name: "admin claims without a slug", as: "admin", tool: "claim_next_task", code: relay.ESlugRequired},
		{name: "claim with waitMs too long", as: "bob", tool: "claim_next_task", args: map[string]any{"waitMs": 25001}, code: relay.EInvalidRequest},
		{name: "claim", as: "bob", tool: "claim_next_task", args: map[string]any{"leaseSeconds": 60}, save: "claimed",
			want: map[string]any{"status": "task", "task.status": "claimed", "task.claimedVia": "chat"}},
		{name: "renew the lease", as: "bob", tool: "renew_task_lease", args: map[string]any{"taskId": "$t", "leaseSeconds": 120}, want: map[string]any{"status": "claimed"}},
		{name: "renew for too long", as: "bob", tool: "renew_task_lease", args: map[string]any{"taskId": "$t", "leaseSeconds": 86401}, code: relay.EInvalidRequest},
		{name: "report progress", as: "bob", tool: "report_task", args: map[string]any{"taskId": "$t", "kind": "progress", "message": "Half."},
			want: map[string]any{"status": "claimed", "reports#len": 1}},
		{name: "report an unknown kind", as: "bob", tool: "report_task", args: map[string]any{"taskId": "$t", "kind": "done", "message": "x"}, code: relay.EInvalidRequest},
		{name: "sender reports", as: "alice", tool: "report_task", args: map[string]any{"taskId": "$t", "kind": "progress", "message": "x"}, code: relay.ETaskUpdateDenied},
		{name: "release", as: "bob", tool: "release_task", args: map[string]any{"taskId": "$t", "reason": "Later."},
			want: map[string]any{"status": "queued", "reports#len": 2}},
		{name: "release again", as: "bob", tool: "release_task", args: map[string]any{"taskId": "$t", "reason": "Later."}, code: relay.ETaskUpdateDenied},
		{name: "claim again", as: "bob", tool: "claim_next_task", want: map[string]any{"status": "task", "task.reports#len": 2}},
		{name: "complete", as: "bob", tool: "report_task", args: map[string]any{"taskId": "$t", "kind": "completed", "message": "Done.", "result": "42"},
			want: map[string]any{"status": "completed", "reports#len": 3}},
		{name: "recipient asks for changes", as: "bob", tool: "request_changes", args: map[string]any{"taskId": "$t", "note": "More."}, code: relay.ETaskChangesDenied},
		{name: "request changes", as: "alice", tool: "request_changes", args: map[string]any{"taskId": "$t", "note": "More."}, want: map[string]any{"status": "queued"}},
		{name: "requeue a queued task", as: "alice", tool: "requeue_task", args: map[string]any{"taskId": "$t", "note": "x"}, code: relay.EInvalidTaskState},
		{name: "recipient cancels", as: "bob", tool: "cancel_task", args: map[string]any{"taskId": "$t", "reason": "No."}, code: relay.ETaskCancelDenied},
		{name: "cancel", as: "alice", tool: "cancel_task", args: map[string]any{"taskId": "$t", "reason": "Not needed."}, want: map[string]any{"status": "cancelled"}},
		{name: "cancel without a reason", as: "alice", tool: "cancel_task", args: map[string]any{"taskId": "$t"}, code: relay.EInvalidRequest},
		{name: "nothing left to claim", as: "bob", tool: "claim_next_task", want: map[string]any{"status": "idle"}},
	})
}
