package mcp_test

import (
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
