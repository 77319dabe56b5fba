package mcp_test

import (
	"context"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestInboxTools: read_updates, arguments → result or error code. Each
// update is delivered once.
func TestInboxTools(t *testing.T) {
	e := newEnv(t)
	clients := e.callers("alice", "bob", "admin")
	ctx := context.Background()
	for range 2 {
		task, err := e.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "t", Instructions: "i"})
		if err != nil {
			t.Fatal(err)
		}
		if c, err := e.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob"}); err != nil || c == nil || c.ID != task.ID {
			t.Fatalf("claim: %v %v", c, err)
		}
	}
	runToolTable(t, clients, []toolCase{
		{name: "nothing for the recipient", as: "bob", tool: "read_updates", want: map[string]any{"updates#len": 0}},
		{name: "one of two", as: "alice", tool: "read_updates", args: map[string]any{"limit": 1},
			want: map[string]any{"updates#len": 1, "updates.0.type": relay.EventTaskClaimed}},
		{name: "the other", as: "alice", tool: "read_updates", want: map[string]any{"updates#len": 1}},
		{name: "none left", as: "alice", tool: "read_updates", want: map[string]any{"updates#len": 0}},
		{name: "limit 0", as: "alice", tool: "read_updates", args: map[string]any{"limit": 0}, code: relay.EInvalidRequest},
		{name: "limit 101", as: "alice", tool: "read_updates", args: map[string]any{"limit": 101}, code: relay.EInvalidRequest},
		{name: "another agent's updates", as: "bob", tool: "read_updates", args: map[string]any{"agentSlug": "alice"}, code: relay.EIdentityMismatch},
		{name: "admin without a slug", as: "admin", tool: "read_updates", code: relay.ESlugRequired},
		{name: "admin for an agent", as: "admin", tool: "read_updates", args: map[string]any{"agentSlug": "bob"}, want: map[string]any{"updates#len": 0}},
	})
}
