package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Two worker runs that keep reopening each other's work stop at the limit:
// bob's run hands back to alice, alice's run asks for changes on bob's task,
// bob's next run hands back again, … Each reopen from a run is a hop of the
// conversation, so the task does not stay one hop from the start forever.
func TestRunsReopeningEachOtherStopAtLimit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.agent("alice")
	e.agent("bob")
	e.chainLimit(3)
	// run claims slug's next task for its worker and returns a client with
	// the run's token.
	run := func(slug, want string) *client.Client {
		t.Helper()
		task, err := e.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: slug, Via: relay.ViaWorker})
		if err != nil || task == nil || task.ID != want {
			t.Fatalf("%s claims %v, %v; want %s", slug, task, err, want)
		}
		tok, err := e.svc.IssueRunToken(ctx, slug, task.ID, 600)
		if err != nil {
			t.Fatal(err)
		}
		return e.client(tok)
	}
	complete := func(slug, id string) {
		t.Helper()
		if _, err := e.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: slug, TaskID: id, Kind: relay.ReportCompleted, Message: "Handed on."}); err != nil {
			t.Fatal(err)
		}
	}
	t1, err := e.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "t1", Instructions: "go"})
	if err != nil {
		t.Fatal(err)
	}
	handBack := map[string]any{"recipientSlug": "alice", "title": "back", "instructions": "your turn"}
	changes := map[string]any{"taskId": t1.ID, "note": "again"}
	for round, wantHops := range []int{1, 3} {
		var back relay.Task
		ok(t, call(t, run("bob", t1.ID), "post_task", handBack), &back)
		if back.ConversationID != t1.ID || back.Hops != wantHops {
			t.Fatalf("round %d: hand-back conversation %s hops %d, want %s %d", round, back.ConversationID, back.Hops, t1.ID, wantHops)
		}
		complete("bob", t1.ID)
		res := call(t, run("alice", back.ID), "request_changes", changes)
		if round == 0 {
			var reopened relay.Task
			ok(t, res, &reopened)
			if reopened.Status != relay.StatusQueued || reopened.Hops != 2 {
				t.Fatalf("reopened t1: %s hops %d, want queued at 2", reopened.Status, reopened.Hops)
			}
			continue
		}
		got := fails(t, res, relay.EChainLimit)
		if got.Details["conversationId"] != t1.ID || !strings.Contains(got.Message, "the limit is 3") {
			t.Fatalf("chain_limit %+v", got)
		}
	}
	if final, err := e.svc.Task(ctx, t1.ID); err != nil || final.Status != relay.StatusCompleted {
		t.Fatalf("t1 after the refusal: %+v %v", final.Status, err)
	}
}
