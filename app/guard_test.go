package app_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// stillQueued fails unless the task id (what names it) is queued: after a
// task posted later ran, which no worker ran (nor claimed, nor blocked).
func stillQueued(t *testing.T, r *app.Relay, id, what string) {
	t.Helper()
	if task := waitStatus(t, r, id, relay.StatusQueued, relay.StatusClaimed, relay.StatusCompleted, relay.StatusBlocked); task.Status != relay.StatusQueued {
		t.Fatalf("%s is %s (claimed via %q), want queued", what, task.Status, task.ClaimedVia)
	}
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
	stillQueued(t, r, intruder.ID, "the intruder's task")
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

// Ensure retiring an agent (projects remove, as the dashboard's remove
// does) stops its worker: a task of its requeued while it is retired waits,
// queued, and its worker runs nothing; another agent's worker meanwhile runs
// a task posted after it (claims go oldest first in each worker).
func TestRetiredAgentsWorkerRunsNothing(t *testing.T) {
	r := startRelay(t)
	createAgent(t, r, "coder")
	createAgent(t, r, "other")
	echoWorker(t, r, "coder", "operator")
	echoWorker(t, r, "other", "operator")
	_, err := r.Services.Workers.SetPaused(true)
	noErr(t, err)
	kept, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "coder", Title: "Before the removal", Instructions: "Do it."})
	noErr(t, err)
	noErr(t, r.Services.Agents.Retire("coder"))
	waitStatus(t, r, kept.ID, relay.StatusBlocked)
	_, err = r.Services.Tasks.Requeue(kept.ID, "try again")
	noErr(t, err)
	_, err = r.Services.Workers.SetPaused(false)
	noErr(t, err)

	later, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "other", Title: "After the removal", Instructions: "Do it."})
	noErr(t, err)
	waitStatus(t, r, later.ID, relay.StatusCompleted)
	stillQueued(t, r, kept.ID, "the retired coder's task")
	if st, ok := workerStatus(t, r, "coder"); !ok || st.Enabled {
		t.Fatalf("the retired coder's worker: %+v %v, want it there and off", st, ok)
	}
	_, err = r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "coder", Harness: "custom", Command: "/bin/true", Workdir: t.TempDir(), Enabled: true})
	wantCode(t, err, relay.EInvalidRequest)
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

// Ensure a run that prints the admin token, another agent's token and its
// own run token (on stdout, stderr and in its answer) shows each of them
// only as [hidden]: in the result, the reports and the run's activity.
func TestRunPrintingAdminTokenIsScrubbed(t *testing.T) {
	r := startRelay(t)
	admin, err := r.Config().AdminToken(false)
	noErr(t, err)
	other, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "other", DisplayName: "Other", ModelSlug: "m", Capabilities: []string{"x"}})
	noErr(t, err)
	createAgent(t, r, "leaky")
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	body := "#!/bin/sh\ncat >/dev/null\n" +
		"echo \"admin $(cat '" + r.Config().TokenPath() + "')\"\n" +
		"echo \"run $CROSSCHAT_TOKEN\" >&2\n" +
		"echo \"other " + other.Token + "\"\n" +
		"printf 'the keys: %s %s %s\\n' \"$(cat '" + r.Config().TokenPath() + "')\" \"$CROSSCHAT_TOKEN\" '" + other.Token + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "leaky", Harness: "custom", Command: script,
		Workdir: dir, AllowedSenders: []string{"operator"}, Enabled: true, TimeoutMinutes: 2})
	noErr(t, err)
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "leaky", Title: "Leak", Instructions: "Print every key you find."})
	noErr(t, err)
	done := waitStatus(t, r, task.ID, relay.StatusCompleted, relay.StatusBlocked)

	var seen []string
	for _, rep := range done.Reports {
		seen = append(seen, rep.Message, rep.Result)
	}
	steps, err := r.Services.Tasks.Activity(task.ID)
	noErr(t, err)
	for _, s := range steps {
		seen = append(seen, s.Text, s.Detail, s.Ref)
	}
	all := strings.Join(seen, "\n")
	for name, secret := range map[string]string{"admin token": admin, "agent token": other.Token} {
		if strings.Contains(all, secret) {
			t.Errorf("the %s leaked into the task or its run view", name)
		}
	}
	if strings.Contains(all, relay.RunTokenPrefix) {
		t.Error("a run token leaked into the task or its run view")
	}
	if !strings.Contains(all, "the keys: [hidden] [hidden] [hidden]") || !strings.Contains(all, "admin [hidden]") {
		t.Fatalf("want the keys shown as [hidden]:\n%s", all)
	}
}

// Ensure a worker cannot be pointed at the relay's own data folder, a
// folder holding it, or one inside it: a run there could read or change
// the admin token and the database.
func TestWorkdirHoldingDataFolderIsRefused(t *testing.T) {
	r := startRelay(t)
	createAgent(t, r, "coder")
	data := r.Config().DataDir
	inside := filepath.Join(data, "runs")
	if err := os.MkdirAll(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		workdir, extra string
	}{
		{"the data folder", data, ""},
		{"its parent", filepath.Dir(data), ""},
		{"inside it", inside, ""},
		{"an extra folder holding it", t.TempDir(), filepath.Dir(data)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := relay.WorkerConfig{AgentSlug: "coder", Harness: "custom", Command: "/bin/sh", Workdir: tc.workdir,
				AllowedSenders: []string{"operator"}, Enabled: true}
			if tc.extra != "" {
				cfg.ExtraDirs = []string{tc.extra}
			}
			_, err := r.Services.Workers.Save(cfg)
			if relay.ErrorCode(err) != relay.EInvalidRequest || !strings.Contains(err.Error(), "data folder") {
				t.Fatalf("saved a worker in %s: %v", tc.name, err)
			}
		})
	}
	_, err := r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "coder", Harness: "custom", Command: "/bin/sh", Workdir: t.TempDir(),
		AllowedSenders: []string{"operator"}, Enabled: true})
	noErr(t, err)
}

// Ensure a run that floods its output (20 MB on stdout) and writes a result
// file past the limit (3 MB) ends cleanly: the task completes, the result
// is cut with a visible marker, and the run view says where the output was
// cut instead of keeping it all.
func TestRunFloodingOutputIsCutAndEndsCleanly(t *testing.T) {
	r := startRelay(t)
	createAgent(t, r, "flood")
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	body := "#!/bin/sh\ncat >/dev/null\nhead -c 20000000 /dev/zero | tr '\\0' 'x'\necho\nhead -c 3000000 /dev/zero | tr '\\0' 'y' > \"$1\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "flood", Harness: "custom", Command: script, Args: []string{"{result_file}"},
		Workdir: dir, AllowedSenders: []string{"operator"}, Enabled: true, TimeoutMinutes: 5})
	noErr(t, err)
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "flood", Title: "Flood", Instructions: "Print a lot."})
	noErr(t, err)
	done := waitStatus(t, r, task.ID, relay.StatusCompleted, relay.StatusBlocked)
	last := done.Reports[len(done.Reports)-1]
	if done.Status != relay.StatusCompleted || !strings.HasSuffix(last.Result, "[The result file passed 2 MiB; the worker read only the start.]") {
		t.Fatalf("task %s, result ending %q", done.Status, last.Result[max(0, len(last.Result)-200):])
	}
	steps, err := r.Services.Tasks.Activity(task.ID)
	noErr(t, err)
	cut := false
	for _, s := range steps {
		cut = cut || strings.Contains(s.Text, "The output passed 16 MiB")
	}
	if !cut || steps[len(steps)-1].Kind != relay.StepEnd {
		t.Fatalf("no cut marker or no end step in %d steps", len(steps))
	}
}
