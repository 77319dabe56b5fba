package mcp_test

import (
	"context"
	"strings"
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

// TestConversationTools: a task starts a conversation or continues its
// parent's (parentTaskId, or a run token's task); hops count the hand-offs
// across agents and are bounded by the limit for agents' own posts; an
// agent's post to itself needs targetSession.
func TestConversationTools(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clients := e.callers("alice", "bob", "carol", "admin")
	e.chainLimit(2)
	// bob's worker runs root, a task alice sent.
	root, err := e.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "root", Instructions: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if claimed, err := e.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaWorker}); err != nil || claimed == nil || claimed.ID != root.ID {
		t.Fatalf("claim root: %v %v", claimed, err)
	}
	runTok, err := e.svc.IssueRunToken(ctx, "bob", root.ID, 600)
	if err != nil {
		t.Fatal(err)
	}
	clients["bob-run"] = e.client(runTok)
	post := func(to string, more ...any) map[string]any {
		m := map[string]any{"recipientSlug": to, "title": "hand-off", "instructions": "Do it."}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i].(string)] = more[i+1]
		}
		return m
	}
	runToolTable(t, clients, []toolCase{
		{name: "a post without a parent starts a conversation", as: "alice", tool: "post_task", args: post("carol"), save: "fresh",
			want: map[string]any{"conversationId": "$fresh", "hops": 0, "depth": 0}},
		{name: "a post with parentTaskId inherits it", as: "carol", tool: "post_task", args: post("bob", "parentTaskId", "$fresh"), save: "linked",
			want: map[string]any{"conversationId": "$fresh", "hops": 1, "depth": 1, "parentTaskId": "$fresh"}},
		{name: "a run's post inherits the run's task", as: "bob-run", tool: "post_task", args: post("carol"), save: "r1",
			want: map[string]any{"conversationId": root.ID, "parentTaskId": root.ID, "hops": 1}},
		{name: "a run's parentTaskId is its task", as: "bob-run", tool: "post_task", args: post("alice", "parentTaskId", "$fresh"),
			want: map[string]any{"conversationId": root.ID, "parentTaskId": root.ID, "hops": 1}},
		{name: "hops go on across agents", as: "carol", tool: "post_task", args: post("alice", "parentTaskId", "$r1"), save: "r2",
			want: map[string]any{"conversationId": root.ID, "hops": 2}},
		{name: "get_task shows the conversation", as: "alice", tool: "get_task", args: map[string]any{"taskId": "$r2"},
			want: map[string]any{"conversationId": root.ID, "hops": 2}},
		{name: "a hop past the limit is refused", as: "alice", tool: "post_task", args: post("bob", "parentTaskId", "$r2"), code: relay.EChainLimit},
		{name: "the admin's manual link is not refused", as: "admin", tool: "post_task", args: post("bob", "senderSlug", "alice", "parentTaskId", "$r2"),
			want: map[string]any{"conversationId": root.ID, "hops": 3}},
		{name: "a post to yourself is refused", as: "alice", tool: "post_task", args: post("alice"), code: relay.ESelfTask},
		{name: "a run's post to its own agent is refused", as: "bob-run", tool: "post_task", args: post("bob"), code: relay.ESelfTask},
		{name: "a post to yourself naming a session", as: "alice", tool: "post_task", args: post("alice", "targetSession", "  review session "),
			want: map[string]any{"targetSession": "review session", "recipientSlug": "alice"}},
		{name: "a run's post to its own agent naming a session", as: "bob-run", tool: "post_task", args: post("bob", "targetSession", "0b5d6a3e-8f0c-4e55-9a0d-2a6b1f1e7c11"),
			want: map[string]any{"targetSession": "0b5d6a3e-8f0c-4e55-9a0d-2a6b1f1e7c11", "conversationId": root.ID, "hops": 1}},
		{name: "a session name on two lines", as: "alice", tool: "post_task", args: post("alice", "targetSession", "a\nb"), code: relay.EInvalidRequest},
		{name: "a session name too long", as: "alice", tool: "post_task", args: post("bob", "targetSession", strings.Repeat("s", relay.MaxTargetSession+1)), code: relay.EInvalidRequest},
		{name: "another agent's session", as: "alice", tool: "post_task", args: post("bob", "targetSession", "bob's review"),
			want: map[string]any{"targetSession": "bob's review", "hops": 0}},
		{name: "the admin posts as an agent to itself", as: "admin", tool: "post_task", args: post("carol", "senderSlug", "carol"),
			want: map[string]any{"senderSlug": "carol", "recipientSlug": "carol"}},
	})
}

// TestPostToMistypedRecipient: post_task to a slug nobody has names the
// agents whose slugs look like it, so an agent can correct its typo; a slug
// like no one's gets the plain refusal.
func TestPostToMistypedRecipient(t *testing.T) {
	e := newEnv(t)
	clients := e.callers("alice", "bob", "bobby", "carol")
	post := func(to string) toolError {
		return fails(t, call(t, clients["alice"], "post_task", map[string]any{"recipientSlug": to, "title": "t", "instructions": "i"}), relay.EUnknownAgent)
	}
	got := post("bobb")
	if !strings.Contains(got.Message, "Similar: bob, bobby (see list_agents).") || got.Details["slug"] != "bobb" {
		t.Errorf("post to bobb: %+v, want the similar bob and bobby named", got)
	}
	if sim, _ := got.Details["similar"].([]any); len(sim) != 2 {
		t.Errorf("details.similar = %v, want [bob bobby]", got.Details["similar"])
	}
	if got := post("zed-zed-zed"); strings.Contains(got.Message, "Similar") || got.Details["similar"] != nil {
		t.Errorf("post to zed-zed-zed: %+v, want no suggestion", got)
	}
}
