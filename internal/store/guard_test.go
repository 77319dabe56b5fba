package store_test

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Ensure a worker cannot be told to take tasks from a slug nobody holds:
// whoever enrolled under it later would make the worker run.
func TestWorkerAllowingUnknownSenderIsRefused(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	c := workerConfig("builder")
	c.AllowedSenders = []string{"operator", "not-yet-here"}
	_, err := e.db.SaveWorker(e.ctx, c)
	wantCode(t, err, relay.EUnknownAgent)
	if n := count(t, e.path, "workers", "1"); n != 0 {
		t.Fatalf("a refused save left %d worker rows", n)
	}
}

// Ensure deleting a sender takes it off every worker's allowed list in the
// same transaction, turns off a worker left with nobody, and removes the
// agent's own worker.
func TestDeletedSenderLeavesEveryAllowedList(t *testing.T) {
	e := newEnv(t, store.Options{})
	for _, s := range []string{"boss", "builder", "tester", "lonely"} {
		e.register(s)
	}
	both := workerConfig("builder")
	both.AllowedSenders = []string{"boss", "operator"}
	e.saveWorker(both)
	only := workerConfig("lonely")
	only.AllowedSenders = []string{"boss"}
	e.saveWorker(only)
	own := workerConfig("boss")
	e.saveWorker(own)
	e.saveWorker(workerConfig("tester"))

	if err := e.db.DeleteAgent(e.ctx, "boss"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		slug    string
		senders []string
		enabled bool
	}{
		{"builder", []string{"operator"}, true},
		{"lonely", []string{}, false},
		{"tester", []string{"operator"}, true},
	} {
		w, err := e.db.Worker(e.ctx, tc.slug)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(w.AllowedSenders, tc.senders) || w.Enabled != tc.enabled {
			t.Errorf("worker %s: senders %v enabled %v, want %v %v", tc.slug, w.AllowedSenders, w.Enabled, tc.senders, tc.enabled)
		}
	}
	_, err := e.db.Worker(e.ctx, "boss")
	wantCode(t, err, relay.EUnknownWorker)

	// Someone enrolls under the freed slug: no worker takes its tasks.
	e.register("boss")
	e.post("boss", "builder", "Run this", 2)
	task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "builder", FromSenders: mustWorker(t, e, "builder").AllowedSenders, Via: relay.ViaWorker})
	if err != nil || task != nil {
		t.Fatalf("claim for builder: %v %v", task, err)
	}
}

func mustWorker(t *testing.T, e *env, slug string) relay.WorkerConfig {
	t.Helper()
	w, err := e.db.Worker(e.ctx, slug)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Ensure a refused deletion (open tasks) leaves the allowed lists as they were.
func TestRefusedAgentDeleteKeepsAllowedLists(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("boss", "builder")
	c := workerConfig("builder")
	c.AllowedSenders = []string{"boss"}
	e.saveWorker(c)
	e.post("boss", "builder", "Open", 2)
	wantCode(t, e.db.DeleteAgent(e.ctx, "boss"), relay.EAgentHasOpenTasks)
	if w := mustWorker(t, e, "builder"); !reflect.DeepEqual(w.AllowedSenders, []string{"boss"}) || !w.Enabled {
		t.Fatalf("worker after refused delete: %+v", w)
	}
}

// Ensure one sender cannot flood the queue: past the open-task cap (a
// setting, 1,000 by default) post_task fails with too_many_open_tasks, and
// a finished task makes room again.
func TestSenderFloodingOpenTasksIsCapped(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("flooder", "victim")
	set, err := e.db.Settings(e.ctx)
	if err != nil || set.MaxOpenTasksPerSender != relay.DefaultMaxOpenTasksPerSender || relay.DefaultMaxOpenTasksPerSender != 1000 {
		t.Fatalf("default cap %+v, %v", set, err)
	}
	set.MaxOpenTasksPerSender = 3
	if _, err := e.db.UpdateSettings(e.ctx, set); err != nil {
		t.Fatal(err)
	}
	var first relay.Task
	for i := range 3 {
		task := e.post("flooder", "victim", "flood", 2)
		if i == 0 {
			first = task
		}
	}
	_, err = e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "flooder", RecipientSlug: "victim", Title: "one more", Instructions: "x"})
	wantCode(t, err, relay.ETooManyOpenTasks) // 429 at the edges: web.TestHTTPStatus
	// Another sender is not held back by the flooder.
	e.post("victim", "flooder", "unrelated", 2)
	if _, err := e.db.CancelTask(e.ctx, "flooder", first.ID, "enough"); err != nil {
		t.Fatal(err)
	}
	e.post("flooder", "victim", "room again", 2)

	// An update that leaves the cap out keeps it.
	set.MaxOpenTasksPerSender = 0
	if set, err = e.db.UpdateSettings(e.ctx, set); err != nil || set.MaxOpenTasksPerSender != 3 {
		t.Fatalf("update without the cap: %+v, %v", set, err)
	}
	set.MaxOpenTasksPerSender = relay.MaxOpenTasksLimit + 1
	_, err = e.db.UpdateSettings(e.ctx, set)
	wantCode(t, err, relay.EInvalidRequest)
}

// Ensure an agent reporting progress in a loop cannot grow its task without
// bound: the task keeps the newest MaxProgressReports progress reports.
func TestProgressReportLoopIsCapped(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	task := e.post("alice", "bob", "loop", 2)
	e.mustClaim("bob")
	for i := range store.MaxProgressReports + 20 {
		if _, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportProgress, Message: "step " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := e.task(task.ID)
	if len(got.Reports) != store.MaxProgressReports {
		t.Fatalf("%d reports kept, want %d", len(got.Reports), store.MaxProgressReports)
	}
	newest := "step " + strconv.Itoa(store.MaxProgressReports+19)
	found := false
	for _, r := range got.Reports {
		found = found || r.Message == newest
		if r.Message == "step 0" {
			t.Fatal("the oldest progress report was kept")
		}
	}
	if !found {
		t.Fatal("the newest progress report is missing")
	}
	e.report("bob", task.ID, relay.ReportCompleted, "Done")
	if got := e.task(task.ID); got.Reports[len(got.Reports)-1].Kind != relay.ReportCompleted {
		t.Fatalf("the result was dropped: %+v", got.Reports[len(got.Reports)-1])
	}
}

// Ensure invites and run logs do not pile up forever: the sweep deletes
// invites expired, revoked or used up past retention, and the run activity
// of tasks idle that long, and keeps everything newer.
func TestSweepPrunesStaleInvitesAndRunLogs(t *testing.T) {
	e := newEnv(t, store.Options{RetentionDays: 1})
	e.agents("alice", "bob")
	invite := func(hours float64, maxUses int) relay.Invite {
		inv, _, err := e.db.CreateInvite(e.ctx, relay.InviteInput{ExpiresInHours: hours, MaxUses: maxUses})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	expired := invite(1, 0)
	revoked := invite(72, 0)
	if _, err := e.db.RevokeInvite(e.ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	unused := invite(72, 1)
	_, code, err := e.db.CreateInvite(e.ctx, relay.InviteInput{ExpiresInHours: 72, MaxUses: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Enroll(e.ctx, relay.EnrollInput{Invite: code, Slug: "joiner", DisplayName: "J", ModelSlug: "m", Capabilities: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	active := invite(720, 0)
	blocked := reach(e, relay.StatusBlocked)
	if _, err := e.db.AppendActivity(e.ctx, blocked.ID, []relay.ActivityEntry{{Kind: relay.StepMessage, Text: "old step"}}); err != nil {
		t.Fatal(err)
	}

	e.clock.Advance(49 * time.Hour)
	fresh := reach(e, relay.StatusBlocked)
	if _, err := e.db.AppendActivity(e.ctx, fresh.ID, []relay.ActivityEntry{{Kind: relay.StepMessage, Text: "new step"}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.db.Sweep(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// expired, revoked and the one the enrollment used up (unused has no use yet).
	if res.PrunedInvites != 3 || res.PrunedActivity != 1 {
		t.Fatalf("sweep %+v", res)
	}
	invs, err := e.db.ListInvites(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, inv := range invs {
		left = append(left, inv.ID)
	}
	slices.Sort(left)
	want := []string{active.ID, unused.ID}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Fatalf("invites left %v, want %v (expired %s, revoked %s)", left, want, expired.ID, revoked.ID)
	}
	if a, err := e.db.Activity(e.ctx, blocked.ID); err != nil || len(a) != 0 {
		t.Fatalf("old run log %+v, %v", a, err)
	}
	if a, err := e.db.Activity(e.ctx, fresh.ID); err != nil || len(a) != 1 {
		t.Fatalf("new run log %+v, %v", a, err)
	}
	if got := e.task(blocked.ID); got.Status != relay.StatusBlocked {
		t.Fatalf("the blocked task itself went: %s", got.Status)
	}
}

// Ensure an agent (a worker's CLI, say) that reports or hands off the
// admin token or an agent token stores only [hidden].
func TestReportCarryingTokensIsScrubbed(t *testing.T) {
	e := newEnv(t, store.Options{})
	admin := relay.NewAdminToken()
	e.db.SetSecrets(admin)
	e.agents("alice", "bob")
	agentToken := relay.NewAgentToken()
	task := e.post("alice", "bob", "work", 2)
	e.mustClaim("bob")
	if _, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportProgress, Message: "found " + admin}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "done", Result: "token=" + agentToken + " admin=" + admin}); err != nil {
		t.Fatal(err)
	}
	handoff, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "use " + agentToken, Instructions: "The admin token is " + admin})
	if err != nil {
		t.Fatal(err)
	}
	got := e.task(task.ID)
	var all []string
	for _, r := range got.Reports {
		all = append(all, r.Message, r.Result)
	}
	h := e.task(handoff.ID)
	all = append(all, h.Title, h.Instructions)
	text := strings.Join(all, "\n")
	if strings.Contains(text, admin) || strings.Contains(text, agentToken) {
		t.Fatalf("a token was stored:\n%s", text)
	}
	if !strings.Contains(text, "token=[hidden] admin=[hidden]") || !strings.Contains(text, "The admin token is [hidden]") {
		t.Fatalf("want [hidden]:\n%s", text)
	}
}
