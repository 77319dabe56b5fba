package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

type claimOut struct {
	Status string      `json:"status"`
	Task   *relay.Task `json:"task"`
}

// Every tool's happy path, in the order a real hand-off uses them.
func TestToolsHappyPath(t *testing.T) {
	e := newEnv(t)
	alice := e.client(e.agent("alice"))
	bob := e.client(e.agent("bob", "code-execution", "text-input", "text-output"))
	admin := e.client(adminToken)

	var who struct {
		Kind  string      `json:"kind"`
		Agent relay.Agent `json:"agent"`
	}
	ok(t, call(t, alice, "whoami", nil), &who)
	if who.Kind != "agent" || who.Agent.Slug != "alice" {
		t.Fatalf("whoami = %+v", who)
	}
	var adminWho struct{ Kind, Note string }
	ok(t, call(t, admin, "whoami", map[string]any{}), &adminWho)
	if adminWho.Kind != "admin" || !strings.Contains(adminWho.Note, "slug") {
		t.Fatalf("admin whoami = %+v", adminWho)
	}

	var reg relay.Agent
	ok(t, call(t, bob, "register_agent", map[string]any{
		"displayName": "Bob the Builder", "modelSlug": "gpt-test",
		"capabilities": []string{"text-output", "code-execution", "text-input", "code-execution"},
		"details":      "Builds things.",
	}), &reg)
	if reg.Slug != "bob" || reg.DisplayName != "Bob the Builder" || strings.Join(reg.Capabilities, ",") != "code-execution,text-input,text-output" {
		t.Fatalf("register_agent = %+v", reg)
	}
	// The admin may register any agent, naming it.
	ok(t, call(t, admin, "register_agent", map[string]any{
		"slug": " Carol ", "displayName": "Carol", "modelSlug": "m", "capabilities": []string{"text-input"},
	}), &reg)
	if reg.Slug != "carol" {
		t.Fatalf("admin register_agent = %+v", reg)
	}

	var hb relay.Agent
	ok(t, call(t, alice, "heartbeat", map[string]any{"agentSlug": "alice"}), &hb)
	if hb.Slug != "alice" || hb.Availability != relay.Online {
		t.Fatalf("heartbeat = %+v", hb)
	}

	var agents []relay.Agent
	ok(t, call(t, alice, "list_agents", map[string]any{"includeOffline": true}), &agents, "agents")
	var slugs []string
	for _, a := range agents {
		slugs = append(slugs, a.Slug)
	}
	if s := strings.Join(slugs, ","); !strings.Contains(s, "alice,bob,carol") {
		t.Fatalf("list_agents = %s", s)
	}

	var task relay.Task
	ok(t, call(t, alice, "post_task", map[string]any{
		"recipientSlug": "bob", "title": "Build it", "instructions": "Build the thing.",
		"requiredCapabilities": []string{"code-execution"}, "priority": 3,
	}), &task)
	if task.Status != relay.StatusQueued || task.SenderSlug != "alice" || task.RecipientSlug != "bob" || task.Priority != 3 || task.Reports == nil {
		t.Fatalf("post_task = %+v", task)
	}

	var claim claimOut
	ok(t, call(t, bob, "claim_next_task", map[string]any{"leaseSeconds": 120}), &claim)
	if claim.Status != "task" || claim.Task.ID != task.ID || claim.Task.Status != relay.StatusClaimed || claim.Task.ClaimedVia != relay.ViaChat {
		t.Fatalf("claim_next_task = %+v", claim)
	}
	var idle claimOut
	ok(t, call(t, bob, "claim_next_task", nil), &idle)
	if idle.Status != "idle" || idle.Task != nil {
		t.Fatalf("second claim = %+v", idle)
	}

	var renewed relay.Task
	ok(t, call(t, bob, "renew_task_lease", map[string]any{"taskId": task.ID, "leaseSeconds": 600}), &renewed)
	if renewed.Status != relay.StatusClaimed || renewed.LeaseExpiresAt <= claim.Task.LeaseExpiresAt {
		t.Fatalf("renew_task_lease: lease %q → %q, want later", claim.Task.LeaseExpiresAt, renewed.LeaseExpiresAt)
	}

	ok(t, call(t, bob, "report_task", map[string]any{"taskId": task.ID, "kind": "progress", "message": "Half way."}), &task)
	ok(t, call(t, bob, "report_task", map[string]any{"taskId": task.ID, "kind": "completed", "message": "Done.", "result": "42"}), &task)
	if task.Status != relay.StatusCompleted || len(task.Reports) != 2 || task.Reports[1].Result != "42" {
		t.Fatalf("report_task = %+v", task)
	}

	var up relay.Updates
	ok(t, call(t, alice, "read_updates", map[string]any{"limit": 10}), &up)
	var types []string
	for _, ev := range up.Updates {
		types = append(types, ev.Type)
	}
	if strings.Join(types, ",") != "task-claimed,task-progress,task-completed" {
		t.Fatalf("read_updates = %v", types)
	}
	ok(t, call(t, alice, "read_updates", nil), &up)
	if len(up.Updates) != 0 {
		t.Fatalf("updates delivered twice: %+v", up.Updates)
	}

	var got relay.Task
	ok(t, call(t, alice, "get_task", map[string]any{"taskId": strings.ToUpper(task.ID)}), &got)
	if got.ID != task.ID || got.Instructions != "Build the thing." {
		t.Fatalf("get_task = %+v", got)
	}

	ok(t, call(t, alice, "request_changes", map[string]any{"taskId": task.ID, "note": "Make it blue."}), &task)
	if task.Status != relay.StatusQueued || task.Reports[len(task.Reports)-1].Kind != relay.ReportChanges {
		t.Fatalf("request_changes = %+v", task)
	}

	ok(t, call(t, bob, "claim_next_task", nil), &claim)
	ok(t, call(t, bob, "report_task", map[string]any{"taskId": task.ID, "kind": "blocked", "message": "Which blue?"}), &task)
	if task.Status != relay.StatusBlocked {
		t.Fatalf("blocked = %+v", task)
	}
	ok(t, call(t, alice, "requeue_task", map[string]any{"taskId": task.ID, "note": "Navy."}), &task)
	if task.Status != relay.StatusQueued {
		t.Fatalf("requeue_task = %+v", task)
	}

	ok(t, call(t, bob, "claim_next_task", nil), &claim)
	ok(t, call(t, bob, "release_task", map[string]any{"taskId": task.ID, "reason": "Out of paint."}), &task)
	if task.Status != relay.StatusQueued || task.ClaimedAt != "" {
		t.Fatalf("release_task = %+v", task)
	}

	ok(t, call(t, alice, "cancel_task", map[string]any{"taskId": task.ID, "reason": "Never mind."}), &task)
	if task.Status != relay.StatusCancelled {
		t.Fatalf("cancel_task = %+v", task)
	}

	// The admin acts for an agent by naming it.
	ok(t, call(t, admin, "read_updates", map[string]any{"agentSlug": "bob"}), &up)
	if len(up.Updates) == 0 || up.Updates[len(up.Updates)-1].Type != relay.EventTaskCancelled {
		t.Fatalf("bob's updates = %+v", up.Updates)
	}
}

// Every error code a tool can answer is reachable through MCP, with the
// envelope in both text and structuredContent.
func TestToolErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	aliceTok := e.agent("alice", "text-input", "text-output")
	bobTok := e.agent("bob", "text-input", "text-output")
	carolTok := e.agent("carol")
	alice, bob, carol, admin := e.client(aliceTok), e.client(bobTok), e.client(carolTok), e.client(adminToken)
	anon := e.client("")

	post := func(title string, priority int) relay.Task {
		t.Helper()
		var task relay.Task
		ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": title, "instructions": "Do " + title, "priority": priority}), &task)
		return task
	}
	queued := post("queued one", relay.PriorityNormal)

	// A worker run of a claimed task, with the hand-off limit at 0: any task
	// it posts would be one hand-off too deep.
	running := post("running one", relay.PriorityUrgent)
	claimed, err := e.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaWorker})
	if err != nil || claimed == nil || claimed.ID != running.ID {
		t.Fatalf("claim for the run: %v %v", claimed, err)
	}
	if _, err := e.svc.UpdateSettings(ctx, relay.Settings{MaxChainDepth: 0}); err != nil {
		t.Fatalf("settings: %v", err)
	}
	runTok, err := e.svc.IssueRunToken(ctx, "bob", claimed.ID, 600)
	if err != nil {
		t.Fatalf("run token: %v", err)
	}
	run := e.client(runTok)

	missing := "0b5d6a3e-8f0c-4e55-9a0d-2a6b1f1e7c11"
	cases := []struct {
		name      string
		tool      string
		args      map[string]any
		code      string
		inMessage string
	}{
		{"no token", "whoami", nil, relay.EUnauthorized, "Bearer"},
		{"other slug", "heartbeat", map[string]any{"agentSlug": "bob"}, relay.EIdentityMismatch, "alice"},
		{"admin without slug", "claim_next_task", map[string]any{}, relay.ESlugRequired, "recipientSlug"},
		{"unknown agent", "heartbeat", map[string]any{"agentSlug": "nobody"}, relay.EUnknownAgent, ""},
		{"unknown recipient", "post_task", map[string]any{"recipientSlug": "nobody", "title": "x", "instructions": "y"}, relay.EUnknownAgent, ""},
		{"unknown task", "get_task", map[string]any{"taskId": missing}, relay.EUnknownTask, ""},
		{"not sender or recipient", "get_task", map[string]any{"taskId": queued.ID}, relay.ETaskAccessDenied, ""},
		{"parent not mine", "post_task", map[string]any{"recipientSlug": "alice", "title": "x", "instructions": "y", "parentTaskId": queued.ID}, relay.ETaskAccessDenied, ""},
		{"chain limit", "post_task", map[string]any{"recipientSlug": "alice", "title": "x", "instructions": "y"}, relay.EChainLimit, ""},
		{"lacks capability", "post_task", map[string]any{"recipientSlug": "bob", "title": "x", "instructions": "y", "requiredCapabilities": []string{"web-search"}}, relay.ERecipientLacksCapability, "web-search"},
		{"sender reports", "report_task", map[string]any{"taskId": queued.ID, "kind": "progress", "message": "hi"}, relay.ETaskUpdateDenied, ""},
		{"renew unclaimed", "renew_task_lease", map[string]any{"taskId": queued.ID}, relay.ETaskUpdateDenied, ""},
		{"recipient cancels", "cancel_task", map[string]any{"taskId": queued.ID, "reason": "no"}, relay.ETaskCancelDenied, ""},
		{"requeue queued", "requeue_task", map[string]any{"taskId": queued.ID, "note": "again"}, relay.EInvalidTaskState, ""},
		{"changes on queued", "request_changes", map[string]any{"taskId": queued.ID, "note": "again"}, relay.EInvalidTaskState, ""},
		{"recipient requeues", "requeue_task", map[string]any{"taskId": queued.ID, "note": "again"}, relay.ETaskRequeueDenied, ""},
		{"recipient asks changes", "request_changes", map[string]any{"taskId": queued.ID, "note": "again"}, relay.ETaskChangesDenied, ""},
		// invalid_request: wrong types, out-of-range values, bad formats.
		{"waitMs too long", "claim_next_task", map[string]any{"waitMs": 25001}, relay.EInvalidRequest, "waitMs"},
		{"waitMs negative", "claim_next_task", map[string]any{"waitMs": -1}, relay.EInvalidRequest, "waitMs"},
		{"waitMs string", "claim_next_task", map[string]any{"waitMs": "100"}, relay.EInvalidRequest, "waitMs"},
		{"waitMs fraction", "claim_next_task", map[string]any{"waitMs": 1.5}, relay.EInvalidRequest, "waitMs"},
		{"lease too short", "claim_next_task", map[string]any{"leaseSeconds": 59}, relay.EInvalidRequest, "leaseSeconds"},
		{"lease too long", "renew_task_lease", map[string]any{"taskId": queued.ID, "leaseSeconds": 86401}, relay.EInvalidRequest, "leaseSeconds"},
		{"limit zero", "read_updates", map[string]any{"limit": 0}, relay.EInvalidRequest, "limit"},
		{"limit too big", "read_updates", map[string]any{"limit": 101}, relay.EInvalidRequest, "limit"},
		{"priority 4", "post_task", map[string]any{"recipientSlug": "bob", "title": "x", "instructions": "y", "priority": 4}, relay.EInvalidRequest, "priority"},
		{"bad task id", "get_task", map[string]any{"taskId": "not-a-uuid"}, relay.EInvalidRequest, "taskId"},
		{"missing task id", "cancel_task", map[string]any{"reason": "x"}, relay.EInvalidRequest, "taskId"},
		{"bad kind", "report_task", map[string]any{"taskId": queued.ID, "kind": "done", "message": "x"}, relay.EInvalidRequest, "kind"},
		{"empty message", "report_task", map[string]any{"taskId": queued.ID, "kind": "progress", "message": "   "}, relay.EInvalidRequest, "message"},
		{"missing title", "post_task", map[string]any{"recipientSlug": "bob", "instructions": "y"}, relay.EInvalidRequest, "title"},
		{"title too long", "post_task", map[string]any{"recipientSlug": "bob", "title": strings.Repeat("x", 501), "instructions": "y"}, relay.EInvalidRequest, "title"},
		{"capabilities not array", "register_agent", map[string]any{"displayName": "A", "modelSlug": "m", "capabilities": "text-input"}, relay.EInvalidRequest, "capabilities"},
		{"capabilities empty", "register_agent", map[string]any{"displayName": "A", "modelSlug": "m", "capabilities": []string{}}, relay.EInvalidRequest, "capabilities"},
		{"capability not string", "register_agent", map[string]any{"displayName": "A", "modelSlug": "m", "capabilities": []any{1}}, relay.EInvalidRequest, "capabilities"},
		{"includeOffline string", "list_agents", map[string]any{"includeOffline": "yes"}, relay.EInvalidRequest, "includeOffline"},
		{"bad slug", "heartbeat", map[string]any{"agentSlug": "-x"}, relay.EInvalidRequest, "agentSlug"},
		{"slug not string", "heartbeat", map[string]any{"agentSlug": 5}, relay.EInvalidRequest, "agentSlug"},
	}
	callers := map[string]*client.Client{
		"no token": anon, "admin without slug": admin, "unknown agent": admin, "unknown recipient": alice,
		"not sender or recipient": carol, "parent not mine": carol, "chain limit": run,
		"recipient cancels": bob, "recipient requeues": bob, "recipient asks changes": bob,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := alice
			if v, found := callers[tc.name]; found {
				c = v
			}
			got := fails(t, call(t, c, tc.tool, tc.args), tc.code)
			if tc.inMessage != "" && !strings.Contains(got.Message, tc.inMessage) {
				t.Errorf("message %q does not mention %q", got.Message, tc.inMessage)
			}
			switch tc.code {
			case relay.EChainLimit:
				if got.Details["limit"] != float64(0) {
					t.Errorf("chain_limit details = %v", got.Details)
				}
			case relay.EIdentityMismatch:
				if got.Details["tokenSlug"] != "alice" {
					t.Errorf("identity_mismatch details = %v", got.Details)
				}
			}
		})
	}

	// Arguments that are not an object at all.
	fails(t, call(t, alice, "whoami", []any{1, 2}), relay.EInvalidRequest)

	// A run token's task replaces any parentTaskId; within the limit, the
	// hand-off is linked to the run's task.
	if _, err := e.svc.UpdateSettings(ctx, relay.Settings{MaxChainDepth: 3}); err != nil {
		t.Fatal(err)
	}
	var child relay.Task
	ok(t, call(t, run, "post_task", map[string]any{"recipientSlug": "alice", "title": "sub", "instructions": "sub", "parentTaskId": queued.ID}), &child)
	if child.ParentTaskID != claimed.ID || child.Depth != 1 {
		t.Fatalf("run-token child = parent %s depth %d, want %s 1", child.ParentTaskID, child.Depth, claimed.ID)
	}
}
