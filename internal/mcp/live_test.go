package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Two live sessions (agent tokens, no worker) that hand a task back and
// forth with parentTaskId stop at the hand-off limit, as worker runs do.
func TestLiveSessionPingPongStopsAtLimit(t *testing.T) {
	e := newEnv(t)
	alice, bob := e.client(e.agent("alice")), e.client(e.agent("bob"))
	e.chainLimit(2)
	var task relay.Task
	ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "t0", "instructions": "go"}), &task)
	first := task.ID
	for depth, hop := range []string{"alice", "bob"} {
		c := bob
		if hop == "bob" {
			c = alice
		}
		var child relay.Task
		ok(t, call(t, c, "post_task", map[string]any{"recipientSlug": hop, "title": "back", "instructions": "again", "parentTaskId": task.ID}), &child)
		if child.Depth != depth+1 || child.Hops != depth+1 || child.ParentTaskID != task.ID || child.ConversationID != first {
			t.Fatalf("hop %d: depth %d hops %d parent %s conversation %s", depth+1, child.Depth, child.Hops, child.ParentTaskID, child.ConversationID)
		}
		task = child
	}
	got := fails(t, call(t, bob, "post_task", map[string]any{"recipientSlug": "alice", "title": "again", "instructions": "again", "parentTaskId": task.ID}), relay.EChainLimit)
	if got.Details["limit"] != float64(2) || got.Details["depth"] != float64(3) || got.Details["conversationId"] != first {
		t.Fatalf("chain_limit details %v, want depth 3, limit 2, conversation %s", got.Details, first)
	}
	if !strings.Contains(got.Message, "conversation "+first) || !strings.Contains(got.Message, "the limit is 2") {
		t.Fatalf("chain_limit message %q names no conversation or limit", got.Message)
	}
}

// The session header (relay.LiveSessionHeader, set by the channel) names
// the live session of an agent's own token: its post records it as the
// task's replySession and its claim as the task's session, on both
// protocol eras and the lean path alike. The admin token's and a run
// token's header is ignored; a malformed one is refused.
func TestLiveSessionHeader(t *testing.T) {
	e := newEnv(t)
	bobTok := e.agent("bob")
	aliceTok := e.agent("alice")
	session := func(id string) map[string]string { return map[string]string{relay.LiveSessionHeader: id} }
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			alice := e.clientWith(aliceTok, era, session("sess-a"))
			var task relay.Task
			ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "asked", "instructions": "x"}), &task)
			if task.ReplySession != "sess-a" {
				t.Fatalf("replySession %q, want sess-a", task.ReplySession)
			}
			var got struct {
				Task relay.Task `json:"task"`
			}
			bob := e.clientWith(bobTok, era, session("sess-b"))
			ok(t, call(t, bob, "claim_next_task", map[string]any{}), &got)
			var child relay.Task
			ok(t, call(t, bob, "post_task", map[string]any{"recipientSlug": "alice", "title": "sub", "instructions": "y"}), &child)
			if child.ParentTaskID != task.ID || child.Hops != 1 || child.ReplySession != "sess-b" {
				t.Fatalf("bob's post while handling %s: parent %q hops %d replySession %q", task.ID, child.ParentTaskID, child.Hops, child.ReplySession)
			}
			ok(t, call(t, bob, "report_task", map[string]any{"taskId": task.ID, "kind": "completed", "message": "done", "result": "r"}), &relay.Task{})
			ok(t, call(t, alice, "claim_next_task", map[string]any{}), &got)
			ok(t, call(t, alice, "report_task", map[string]any{"taskId": child.ID, "kind": "completed", "message": "done", "result": "r"}), &relay.Task{})
		})
	}

	var task relay.Task
	ok(t, call(t, e.clientWith(adminToken, "", session("sess-x")), "post_task",
		map[string]any{"senderSlug": "alice", "recipientSlug": "bob", "title": "by the admin", "instructions": "x"}), &task)
	if task.ReplySession != "" {
		t.Fatalf("the admin token's post has replySession %q, want none", task.ReplySession)
	}
	runTok, err := e.svc.IssueRunToken(context.Background(), "bob", task.ID, 600)
	if err != nil {
		t.Fatal(err)
	}
	var child relay.Task
	ok(t, call(t, e.clientWith(runTok, "", session("sess-run")), "post_task",
		map[string]any{"recipientSlug": "alice", "title": "from a run", "instructions": "x"}), &child)
	if child.ReplySession != "" || child.ParentTaskID != task.ID {
		t.Fatalf("a run token's post: replySession %q parent %q, want none and the run's task", child.ReplySession, child.ParentTaskID)
	}
	// The dashboard's header (internal/web's SessionHeader) carries a
	// sign-in secret, not a live session: a value sent in it, shaped like a
	// session id as a dashboard secret is, is never stored as one.
	var plain relay.Task
	ok(t, call(t, e.clientWith(aliceTok, "", map[string]string{"X-Crosschat-Session": "dashboard-secret_0123456789"}), "post_task",
		map[string]any{"recipientSlug": "bob", "title": "with the dashboard's header", "instructions": "x"}), &plain)
	if plain.ReplySession != "" {
		t.Fatalf("a post with the dashboard's session header has replySession %q, want none", plain.ReplySession)
	}
	got := fails(t, call(t, e.clientWith(aliceTok, "", session("not an id")), "post_task",
		map[string]any{"recipientSlug": "bob", "title": "bad", "instructions": "x"}), relay.EInvalidRequest)
	if !strings.Contains(got.Message, "session") {
		t.Fatalf("the refusal %q does not name the session", got.Message)
	}
}

// TestLiveSessionClaimLeavesOtherSessionsTasks: over MCP, a claim through
// live session A (its header) takes the task aimed at A, not the older one
// aimed at the agent's other live session B; a claim through no session
// leaves both to their sessions; B's claim takes B's.
func TestLiveSessionClaimLeavesOtherSessionsTasks(t *testing.T) {
	e := newEnv(t)
	aliceTok, bobTok := e.agent("alice"), e.agent("bob")
	live := e.db.(interface {
		SeeLiveSession(context.Context, relay.LiveSession) error
	})
	for _, id := range []string{"sess-a", "sess-b"} {
		if err := live.SeeLiveSession(context.Background(), relay.LiveSession{AgentSlug: "bob", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	alice := e.client(aliceTok)
	var forB, forA relay.Task
	ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "for B", "instructions": "x", "targetSession": "sess-b"}), &forB)
	ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "for A", "instructions": "x", "targetSession": "sess-a"}), &forA)
	for _, step := range []struct {
		session, want string
	}{
		{"", ""}, {"sess-a", forA.ID}, {"sess-a", ""}, {"sess-b", forB.ID},
	} {
		c := e.client(bobTok)
		if step.session != "" {
			c = e.clientWith(bobTok, "", map[string]string{relay.LiveSessionHeader: step.session})
		}
		var out idleOut
		text := ok(t, call(t, c, "claim_next_task", map[string]any{}), &out)
		if step.want == "" && out.Status != "idle" || step.want != "" && (out.Task == nil || out.Task.ID != step.want) {
			t.Fatalf("claim through session %q = %s; want %q", step.session, text, step.want)
		}
	}
}

// TestClaimRefusesAMalformedSessionForAWorkerOnlyAgent: claim_next_task
// refuses a malformed live session header even for an agent whose
// exclusive worker takes its tasks (it would answer idle otherwise).
func TestClaimRefusesAMalformedSessionForAWorkerOnlyAgent(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("builder")
	e.agent("other") // the worker's only allowed sender
	if _, err := e.svc.SaveWorker(context.Background(), relay.WorkerConfig{
		AgentSlug: "builder", Harness: relay.HarnessCustom, Command: "/bin/true", Workdir: t.TempDir(),
		AllowedSenders: []string{"other"}, Enabled: true, Exclusive: true,
	}); err != nil {
		t.Fatal(err)
	}
	c := e.clientWith(tok, "", map[string]string{relay.LiveSessionHeader: "not an id"})
	got := fails(t, call(t, c, "claim_next_task", map[string]any{}), relay.EInvalidRequest)
	if !strings.Contains(got.Message, "session") {
		t.Fatalf("the refusal %q does not name the session", got.Message)
	}
}

// TestCapabilityListBoundedOverMCP: post_task with a 1 MiB
// requiredCapabilities array is refused with invalid_request naming the
// bound.
func TestCapabilityListBoundedOverMCP(t *testing.T) {
	e := newEnv(t)
	alice := e.client(e.agent("alice"))
	e.agent("bob")
	caps := make([]string, 262_000)
	for i := range caps {
		caps[i] = "a"
	}
	got := fails(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "t", "instructions": "x", "requiredCapabilities": caps}), relay.EInvalidRequest)
	if !strings.Contains(got.Message, "at most 32") {
		t.Fatalf("the refusal %q does not name the bound", got.Message)
	}
}
