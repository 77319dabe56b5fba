package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestRunTokenScope is N5: a worker run's token acts only on its run's
// task. Every tool is called with it: the run's own task and its
// conversation are served; the agent's other queued task (the one the
// review claimed with a run token), its journal, its profile and tasks
// outside the conversation are refused with forbidden, naming the rule.
func TestRunTokenScope(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clients := e.callers("alice", "bob", "carol")
	post := func(from, to, title string) relay.Task {
		t.Helper()
		task, err := e.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "go", Priority: relay.PriorityNormal})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	root := post("alice", "bob", "the run's task")
	if claimed, err := e.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaWorker}); err != nil || claimed == nil || claimed.ID != root.ID {
		t.Fatalf("claim root: %v %v", claimed, err)
	}
	tok, err := e.svc.IssueRunToken(ctx, "bob", root.ID, 600)
	if err != nil {
		t.Fatal(err)
	}
	clients["run"] = e.client(tok)
	queued := post("carol", "bob", "another task of the same agent").ID
	outside := post("bob", "carol", "bob's own task outside the run").ID
	handOff := map[string]any{"recipientSlug": "carol", "title": "part of it", "instructions": "Do this part."}
	id := func(v string) map[string]any { return map[string]any{"taskId": v} }
	with := func(m map[string]any, kv ...string) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	forbidden := relay.EForbidden
	runToolTable(t, clients, []toolCase{
		{name: "whoami", as: "run", tool: "whoami", want: map[string]any{"runTaskId": root.ID}},
		{name: "list_agents", as: "run", tool: "list_agents", args: map[string]any{"includeOffline": true}},
		{name: "post_task hands off from the run's task", as: "run", tool: "post_task", args: handOff, save: "handoff", want: map[string]any{"conversationId": root.ID, "parentTaskId": root.ID}},
		{name: "claim_next_task", as: "run", tool: "claim_next_task", code: forbidden},
		{name: "read_updates", as: "run", tool: "read_updates", code: forbidden},
		{name: "register_agent", as: "run", tool: "register_agent", args: map[string]any{"displayName": "B", "modelSlug": "m", "capabilities": []string{"text-input"}}, code: forbidden},
		{name: "heartbeat", as: "run", tool: "heartbeat", code: forbidden},
		{name: "get_task on the run's task", as: "run", tool: "get_task", args: id(root.ID), want: map[string]any{"id": root.ID}},
		{name: "get_task on its hand-off", as: "run", tool: "get_task", args: id("$handoff"), want: map[string]any{"id": "$handoff"}},
		{name: "get_task on another task of the agent", as: "run", tool: "get_task", args: id(queued), code: forbidden},
		{name: "get_task outside the conversation", as: "run", tool: "get_task", args: id(outside), code: forbidden},
		{name: "renew_task_lease on the run's task", as: "run", tool: "renew_task_lease", args: id(root.ID), want: map[string]any{"status": "claimed"}},
		{name: "renew_task_lease on another task", as: "run", tool: "renew_task_lease", args: id(queued), code: forbidden},
		{name: "report_task on another task", as: "run", tool: "report_task", args: with(id(queued), "kind", "completed", "message", "done"), code: forbidden},
		{name: "report_task on the run's task", as: "run", tool: "report_task", args: with(id(root.ID), "kind", "progress", "message", "half way"), want: map[string]any{"status": "claimed"}},
		{name: "release_task on another task", as: "run", tool: "release_task", args: with(id(queued), "reason", "no"), code: forbidden},
		{name: "request_changes outside the conversation", as: "run", tool: "request_changes", args: with(id(outside), "note", "again"), code: forbidden},
		{name: "request_changes in the conversation", as: "run", tool: "request_changes", args: with(id("$handoff"), "note", "again"), code: relay.EInvalidTaskState},
		{name: "requeue_task outside the conversation", as: "run", tool: "requeue_task", args: with(id(outside), "note", "again"), code: forbidden},
		{name: "requeue_task in the conversation", as: "run", tool: "requeue_task", args: with(id("$handoff"), "note", "again"), code: relay.EInvalidTaskState},
		{name: "cancel_task outside the conversation", as: "run", tool: "cancel_task", args: with(id(outside), "reason", "no"), code: forbidden},
		{name: "cancel_task on its hand-off", as: "run", tool: "cancel_task", args: with(id("$handoff"), "reason", "not needed"), want: map[string]any{"status": "cancelled"}},
		{name: "release_task on the run's task", as: "run", tool: "release_task", args: with(id(root.ID), "reason", "giving it back"), want: map[string]any{"status": "queued"}},
		// The agent's own token still acts as the whole agent.
		{name: "the agent's token claims", as: "bob", tool: "claim_next_task", want: map[string]any{"status": "task"}},
	})
	got := fails(t, call(t, clients["run"], "claim_next_task", map[string]any{}), relay.EForbidden)
	if got.Details["rule"] != "run_token_scope" || got.Details["runTaskId"] != root.ID || !strings.Contains(got.Message, "acts only on its run's task") {
		t.Fatalf("forbidden answer does not name the rule: %+v", got)
	}
}
