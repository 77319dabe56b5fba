package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// TestCrashSafety drives MCP load at a real relay process, kills it with
// SIGKILL mid-flight, restarts it on the same data directory and checks
// that everything it acknowledged survived, that no task is in an
// impossible state, and that SQLite's integrity check passes.
func TestCrashSafety(t *testing.T) {
	p, dataDir := childRelay(t)
	admin := adminToken(t, dataDir)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	c := bench.NewClient(p.url, 16)
	defer c.Close()

	const (
		killAfter = 400 // acknowledged operations before the kill
		maxPosts  = 450 // keeps every task listable in one page
	)
	a := &acks{posted: map[string]relay.Task{}, claimed: map[string]bool{}, reports: map[string][]ackReport{}}
	var (
		killed  atomic.Bool
		posts   atomic.Int64
		errMu   sync.Mutex
		loadErr []error
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// fail records an error that happened before the kill: a real failure.
	fail := func(err error) bool {
		if killed.Load() || ctx.Err() != nil {
			return true
		}
		errMu.Lock()
		loadErr = append(loadErr, err)
		errMu.Unlock()
		cancel()
		return true
	}
	poster := func(from, to testAgent) {
		defer wg.Done()
		for ctx.Err() == nil {
			n := posts.Add(1)
			if n > maxPosts {
				return
			}
			var task relay.Task
			args := map[string]any{"recipientSlug": to.slug, "title": fmt.Sprintf("crash %s→%s %d", from.slug, to.slug, n), "instructions": "Survive a crash."}
			if err := c.Tool(ctx, from.token, "post_task", args, &task); err != nil {
				if fail(fmt.Errorf("post_task: %w", err)) {
					return
				}
			}
			a.mu.Lock()
			a.posted[task.ID] = task
			a.mu.Unlock()
			a.ops.Add(1)
		}
	}
	worker := func(w testAgent) {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			var ans claimAnswer
			if err := c.Tool(ctx, w.token, "claim_next_task", map[string]any{"waitMs": 1000}, &ans); err != nil {
				fail(fmt.Errorf("claim_next_task: %w", err))
				return
			}
			if ans.Status != "task" {
				continue
			}
			id := ans.Task.ID
			a.mu.Lock()
			a.claimed[id] = true
			a.mu.Unlock()
			a.ops.Add(1)
			final := relay.ReportCompleted
			if i%5 == 4 {
				final = relay.ReportBlocked
			}
			for _, kind := range []string{relay.ReportProgress, final} {
				var task relay.Task
				args := map[string]any{"taskId": id, "kind": kind, "message": "Step " + kind + "."}
				if err := c.Tool(ctx, w.token, "report_task", args, &task); err != nil {
					fail(fmt.Errorf("report_task %s: %w", kind, err))
					return
				}
				last := task.Reports[len(task.Reports)-1]
				if last.Kind != kind {
					fail(fmt.Errorf("report_task %s answered a task whose last report is %s", kind, last.Kind))
					return
				}
				a.mu.Lock()
				a.reports[id] = append(a.reports[id], ackReport{id: last.ID, kind: kind})
				a.mu.Unlock()
				a.ops.Add(1)
			}
		}
	}
	for _, pair := range [][2]testAgent{{alice, bob}, {bob, alice}} {
		wg.Add(2)
		go poster(pair[0], pair[1])
		go poster(pair[0], pair[1])
	}
	for _, w := range []testAgent{alice, bob, alice, bob} {
		wg.Add(1)
		go worker(w)
	}

	// Kill once enough was acknowledged, while requests are in flight.
	deadline := time.Now().Add(2 * time.Minute)
	for a.ops.Load() < killAfter && ctx.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("only %d operations acknowledged in 2 minutes\n%s", a.ops.Load(), p.out.String())
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
	killed.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	killErr := p.wait(t, 10*time.Second)
	cancel()
	wg.Wait()
	errMu.Lock()
	for _, err := range loadErr {
		t.Errorf("before the kill: %v", err)
	}
	errMu.Unlock()
	if t.Failed() {
		t.FailNow()
	}
	var exitErr *exec.ExitError
	if !errors.As(killErr, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("relay did not die of SIGKILL: %v", killErr)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	nReports := 0
	for _, r := range a.reports {
		nReports += len(r)
	}
	t.Logf("killed after %d acknowledged operations: %d tasks posted, %d claimed, %d reports", a.ops.Load(), len(a.posted), len(a.claimed), nReports)
	dbPath := filepath.Join(dataDir, "relay.db")
	if err := store.IntegrityCheck(dbPath); err != nil {
		t.Errorf("right after the crash: %v", err)
	}

	// Restart on the same data directory and check what survived.
	p2 := startProcess(t, dataDir)
	c2 := bench.NewClient(p2.url, 4)
	defer c2.Close()
	bctx, bcancel := context.WithTimeout(context.Background(), time.Minute)
	defer bcancel()

	var list []relay.TaskSummary
	filter := relay.TaskFilter{Agent: "alice", Limit: relay.MaxListLimit}
	if err := c2.Bridge(bctx, admin, "Tasks", "List", &list, filter); err != nil {
		t.Fatalf("Tasks.List after restart: %v", err)
	}
	if len(list) >= relay.MaxListLimit {
		t.Fatalf("%d tasks: more than one page; lower maxPosts", len(list))
	}
	if len(list) < len(a.posted) {
		t.Errorf("after restart %d tasks exist, but %d posts were acknowledged", len(list), len(a.posted))
	}
	type detail struct {
		Task relay.Task `json:"task"`
	}
	for _, s := range list {
		var d detail
		if err := c2.Bridge(bctx, admin, "Tasks", "Get", &d, s.ID); err != nil {
			t.Errorf("Tasks.Get %s: %v", s.ID, err)
			continue
		}
		task := d.Task
		if msg := impossible(task); msg != "" {
			t.Errorf("task %s (%s) is in an impossible state: %s; %+v", task.ID, task.Status, msg, task)
		}
		posted, wasAcked := a.posted[task.ID]
		if !wasAcked {
			continue // committed, but the answer was lost in the crash: fine
		}
		delete(a.posted, task.ID)
		if task.SenderSlug != posted.SenderSlug || task.RecipientSlug != posted.RecipientSlug || task.Title != posted.Title || task.Instructions != posted.Instructions {
			t.Errorf("task %s changed: posted %+v, found %+v", task.ID, posted, task)
		}
		if a.claimed[task.ID] && task.Status == relay.StatusQueued {
			t.Errorf("task %s: its claim was acknowledged but it is queued again", task.ID)
		}
		found := map[string]string{}
		for _, r := range task.Reports {
			found[r.ID] = r.Kind
		}
		for _, r := range a.reports[task.ID] {
			kind, ok := found[r.id]
			switch {
			case !ok:
				t.Errorf("task %s: acknowledged %s report %s is missing", task.ID, r.kind, r.id)
			case kind != r.kind:
				t.Errorf("task %s: report %s is %s, acknowledged as %s", task.ID, r.id, kind, r.kind)
			}
			if (r.kind == relay.ReportCompleted && task.Status != relay.StatusCompleted) || (r.kind == relay.ReportBlocked && task.Status != relay.StatusBlocked) {
				t.Errorf("task %s: acknowledged %s report but status is %s", task.ID, r.kind, task.Status)
			}
		}
	}
	for id := range a.posted {
		t.Errorf("acknowledged task %s is missing after restart", id)
	}

	// The restarted relay works: post, claim, complete.
	var fresh relay.Task
	if err := c2.Tool(bctx, alice.token, "post_task", map[string]any{"recipientSlug": "bob", "title": "after the crash", "instructions": "Still here?"}, &fresh); err != nil {
		t.Fatalf("post after restart: %v", err)
	}
	for {
		var ans claimAnswer
		if err := c2.Tool(bctx, bob.token, "claim_next_task", nil, &ans); err != nil {
			t.Fatalf("claim after restart: %v", err)
		}
		if ans.Status != "task" {
			t.Fatalf("claim after restart found nothing; %s was posted", fresh.ID)
		}
		if ans.Task.ID == fresh.ID {
			break
		}
	}

	// A clean stop, then the file passes SQLite's integrity check.
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p2.wait(t, 20*time.Second); err != nil {
		t.Errorf("relay exited with %v after SIGTERM\n%s", err, p2.out.String())
	}
	if err := store.IntegrityCheck(dbPath); err != nil {
		t.Error(err)
	}
}

// impossible returns what is wrong with a task's state, or "". In this
// test tasks are only posted, claimed over MCP, reported on and completed
// or blocked; nothing is released, requeued or cancelled.
func impossible(t relay.Task) string {
	count := map[string]int{}
	for _, r := range t.Reports {
		switch r.Kind {
		case relay.ReportProgress, relay.ReportCompleted, relay.ReportBlocked:
			count[r.Kind]++
		default:
			return "unexpected report kind " + r.Kind
		}
	}
	last := ""
	if n := len(t.Reports); n > 0 {
		last = t.Reports[n-1].Kind
	}
	switch t.Status {
	case relay.StatusQueued:
		if t.ClaimedAt != "" || t.LeaseExpiresAt != "" || t.ClaimedVia != "" || len(t.Reports) > 0 {
			return "queued but claimed, leased or reported on"
		}
	case relay.StatusClaimed:
		if t.ClaimedAt == "" || t.LeaseExpiresAt == "" || t.ClaimedVia != relay.ViaChat {
			return "claimed without a claim time, lease or channel"
		}
		if count[relay.ReportCompleted]+count[relay.ReportBlocked] > 0 {
			return "claimed but already finished"
		}
	case relay.StatusCompleted, relay.StatusBlocked:
		final := string(t.Status)
		other := relay.ReportBlocked
		if t.Status == relay.StatusBlocked {
			other = relay.ReportCompleted
		}
		if t.ClaimedAt == "" || t.LeaseExpiresAt != "" {
			return final + " but never claimed, or still leased"
		}
		if count[final] != 1 || count[other] != 0 || last != final {
			return fmt.Sprintf("%s with reports %v", final, count)
		}
	default:
		return "unknown status"
	}
	if t.Status != relay.StatusQueued && t.ClaimedAt < t.CreatedAt {
		return "claimed before it was created"
	}
	return ""
}

// TestGracefulShutdown checks that SIGTERM answers a waiting claim at once,
// exits 0 and leaves a sound database.
func TestGracefulShutdown(t *testing.T) {
	p, dataDir := childRelay(t)
	admin := adminToken(t, dataDir)
	carol := addAgent(t, p, dataDir, "carol")
	c := bench.NewClient(p.url, 4)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	agentState := func() relay.Agent {
		var agents []relay.Agent
		if err := c.Bridge(ctx, admin, "Agents", "List", &agents); err != nil {
			t.Fatalf("Agents.List: %v", err)
		}
		for _, ag := range agents {
			if ag.Slug == carol.slug {
				return ag
			}
		}
		t.Fatalf("carol is not listed")
		return relay.Agent{}
	}
	before := agentState()

	type answer struct {
		res claimAnswer
		err error
		at  time.Time
	}
	answered := make(chan answer, 1)
	wrote := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) }}
	go func() {
		var a answer
		a.err = c.Tool(httptrace.WithClientTrace(ctx, trace), carol.token, "claim_next_task", map[string]any{"waitMs": 20000}, &a.res)
		a.at = time.Now()
		answered <- a
	}()
	select {
	case <-wrote:
	case a := <-answered:
		t.Fatalf("claim answered before SIGTERM: %+v, %v", a.res, a.err)
	case <-ctx.Done():
		t.Fatal("claim request was never sent")
	}
	// The claim's first attempt refreshes carol's presence in its own
	// commit; once that is visible the request is waiting on the relay.
	deadline := time.Now().Add(10 * time.Second)
	for agentState().LastSeenAt == before.LastSeenAt {
		if time.Now().After(deadline) {
			t.Fatal("the waiting claim never reached the relay")
		}
		select {
		case a := <-answered:
			t.Fatalf("claim answered before SIGTERM: %+v, %v", a.res, a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}

	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-answered:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting claim was not answered within 5 s of SIGTERM")
	}
	if a.err != nil {
		t.Fatalf("waiting claim failed at shutdown: %v", a.err)
	}
	if a.res.Status != "idle" {
		t.Errorf("waiting claim answered %+v at shutdown, want idle", a.res)
	}
	t.Logf("waiting claim answered %s after SIGTERM", a.at.Sub(sent))
	if err := p.wait(t, 15*time.Second); err != nil {
		t.Errorf("relay exited with %v after SIGTERM, want 0\n%s", err, p.out.String())
	}
	if err := store.IntegrityCheck(filepath.Join(dataDir, "relay.db")); err != nil {
		t.Error(err)
	}
}
