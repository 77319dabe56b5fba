package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// idleOut is claim_next_task's answer with its note.
type idleOut struct {
	Status string      `json:"status"`
	Task   *relay.Task `json:"task"`
	Note   string      `json:"note"`
}

// An agent whose enabled worker is exclusive gets nothing through chat —
// with its own token or the admin token acting as it — and is only marked
// present; any other worker setting leaves chat claims alone.
func TestClaimLeavesWorkerOnlyTasksToTheWorker(t *testing.T) {
	cases := []struct {
		name               string
		enabled, exclusive bool
		admin              bool
		workerOnly         bool
	}{
		{"enabled and exclusive", true, true, false, true},
		{"enabled and exclusive, admin acting", true, true, true, true},
		{"disabled and exclusive", false, true, false, false},
		{"enabled, not exclusive", true, false, false, false},
		{"disabled, not exclusive, admin acting", false, false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			tok := e.agent("builder")
			e.agent("other") // the worker's only allowed sender, not the operator
			task, err := e.svc.PostTask(ctx, relay.PostTaskInput{
				SenderSlug: e.svc.OperatorSlug(), RecipientSlug: "builder", Title: "Build", Instructions: "Build it.",
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.SaveWorker(ctx, relay.WorkerConfig{
				AgentSlug: "builder", Harness: relay.HarnessCustom, Command: "/bin/true", Workdir: t.TempDir(),
				AllowedSenders: []string{"other"}, Enabled: tc.enabled, Exclusive: tc.exclusive,
			}); err != nil {
				t.Fatal(err)
			}
			c, args := e.client(tok), map[string]any{"waitMs": 20000}
			if tc.admin {
				c, args = e.client(adminToken), map[string]any{"waitMs": 20000, "recipientSlug": "Builder"}
			}
			before, err := e.svc.GetAgent(ctx, "builder")
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // timestamps have millisecond resolution

			start := time.Now()
			var out idleOut
			text := ok(t, call(t, c, "claim_next_task", args), &out)

			got, err := e.svc.Task(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.workerOnly {
				if out.Status != "task" || out.Task == nil || out.Task.ID != task.ID || out.Note != "" {
					t.Fatalf("claim = %s, want the task", text)
				}
				if got.Status != relay.StatusClaimed || got.ClaimedVia != relay.ViaChat {
					t.Fatalf("task after claim = %+v", got)
				}
				return
			}
			if out.Status != "idle" || out.Task != nil || !strings.Contains(out.Note, "worker") {
				t.Fatalf("claim = %s, want idle with a note about the worker", text)
			}
			if waited := time.Since(start); waited > 5*time.Second {
				t.Fatalf("worker-only claim waited %v; it should answer at once", waited)
			}
			if got.Status != relay.StatusQueued || got.ClaimedAt != "" {
				t.Fatalf("worker-only claim touched the task: %+v", got)
			}
			after, err := e.svc.GetAgent(ctx, "builder")
			if err != nil {
				t.Fatal(err)
			}
			if after.LastSeenAt <= before.LastSeenAt {
				t.Fatalf("worker-only claim did not heartbeat: last seen %q → %q", before.LastSeenAt, after.LastSeenAt)
			}
		})
	}
}

// A worker-only agent that is unknown is still refused as before, and the
// note does not hide identity errors.
func TestClaimWorkerOnlyKeepsIdentityRules(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("builder")
	e.agent("other")
	if _, err := e.svc.SaveWorker(context.Background(), relay.WorkerConfig{
		AgentSlug: "builder", Harness: relay.HarnessCustom, Command: "/bin/true", Workdir: "/tmp",
		AllowedSenders: []string{"operator"}, Enabled: true, Exclusive: true,
	}); err != nil {
		t.Fatal(err)
	}
	fails(t, call(t, e.client(tok), "claim_next_task", map[string]any{"recipientSlug": "other"}), relay.EIdentityMismatch)
	fails(t, call(t, e.client(adminToken), "claim_next_task", map[string]any{}), relay.ESlugRequired)
	fails(t, call(t, e.client(adminToken), "claim_next_task", map[string]any{"recipientSlug": "ghost"}), relay.EUnknownAgent)
}
