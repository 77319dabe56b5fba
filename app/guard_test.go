package app_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// waitStatus polls a task until it is in one of the states, or fails at the deadline.
func waitStatus(t *testing.T, r *app.Relay, id string, states ...relay.TaskStatus) relay.Task {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		task, err := r.Service().Task(context.Background(), id)
		noErr(t, err)
		if slices.Contains(states, task.Status) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s, want %v", id, task.Status, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// echoWorker saves a worker for slug running a shell script that answers
// "done", taking tasks from senders.
func echoWorker(t *testing.T, r *app.Relay, slug string, senders ...string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: slug, Harness: "custom", Command: script,
		Workdir: dir, AllowedSenders: senders, Enabled: true, TimeoutMinutes: 2})
	noErr(t, err)
}

func createAgent(t *testing.T, r *app.Relay, slug string) {
	t.Helper()
	_, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
}

// Ensure an agent enrolled (with an invite) under a deleted sender's slug
// cannot make a worker run: the worker no longer takes tasks from that
// slug. Claims go oldest first, so the intruder's task, posted before the
// operator's, would have run first if the worker still allowed it.
func TestDeletedSenderSlugCannotRunWorker(t *testing.T) {
	r := startRelay(t)
	svc, ctx := r.Service(), context.Background()
	createAgent(t, r, "coder")
	createAgent(t, r, "boss")
	echoWorker(t, r, "coder", "boss", "operator")
	noErr(t, r.Services.Agents.Delete("boss"))

	_, code, err := svc.CreateInvite(ctx, relay.InviteInput{ExpiresInHours: 1, MaxUses: 1})
	noErr(t, err)
	_, err = svc.Enroll(ctx, relay.EnrollInput{Invite: code, Slug: "boss", DisplayName: "Not the boss", ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
	intruder, err := svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "boss", RecipientSlug: "coder", Title: "rm -rf", Instructions: "Run it."})
	noErr(t, err)
	legit, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "coder", Title: "Real work", Instructions: "Do it."})
	noErr(t, err)

	waitStatus(t, r, legit.ID, relay.StatusCompleted)
	if task := waitStatus(t, r, intruder.ID, relay.StatusQueued, relay.StatusClaimed, relay.StatusCompleted, relay.StatusBlocked); task.Status != relay.StatusQueued {
		t.Fatalf("the intruder's task is %s (claimed via %q), want queued", task.Status, task.ClaimedVia)
	}
	st, ok := workerStatus(t, r, "coder")
	if !ok || !slices.Equal(st.AllowedSenders, []string{"operator"}) {
		t.Fatalf("coder's worker: %+v", st)
	}
}

// Ensure deleting an agent stops and removes its worker at once, so a new
// agent created under the same slug inherits no running worker.
func TestDeletedAgentsWorkerIsNotInherited(t *testing.T) {
	r := startRelay(t)
	createAgent(t, r, "coder")
	echoWorker(t, r, "coder", "operator")
	noErr(t, r.Services.Agents.Delete("coder"))
	if st, ok := workerStatus(t, r, "coder"); ok {
		t.Fatalf("the deleted agent's worker is still there: %s", st.State)
	}
	createAgent(t, r, "coder")
	if st, ok := workerStatus(t, r, "coder"); ok {
		t.Fatalf("the new coder inherited a worker: %s", st.State)
	}
}

func workerStatus(t *testing.T, r *app.Relay, slug string) (relay.WorkerStatus, bool) {
	t.Helper()
	ov, err := r.Services.Workers.List()
	noErr(t, err)
	for _, w := range ov.Workers {
		if w.AgentSlug == slug {
			return w, true
		}
	}
	return relay.WorkerStatus{}, false
}
