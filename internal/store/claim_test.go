package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

func TestConcurrentClaimersClaimEachTaskOnce(t *testing.T) {
	const tasks, claimers = 200, 50
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	posted := map[string]bool{}
	for i := 0; i < tasks; i++ {
		posted[e.post("alice", "bob", fmt.Sprintf("task %d", i), 1+i%3).ID] = true
	}
	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		wg      sync.WaitGroup
		errs    = make(chan error, claimers)
	)
	start := make(chan struct{})
	for i := 0; i < claimers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				task, err := e.db.ClaimNext(context.Background(), relay.ClaimInput{RecipientSlug: "bob"})
				if err != nil {
					errs <- err
					return
				}
				if task == nil {
					return
				}
				mu.Lock()
				claimed[task.ID]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claim: %v", err)
	}
	if len(claimed) != tasks {
		t.Fatalf("%d distinct tasks claimed, want %d", len(claimed), tasks)
	}
	for id, n := range claimed {
		if n != 1 || !posted[id] {
			t.Fatalf("task %s claimed %d times (posted: %v)", id, n, posted[id])
		}
	}
	if u := e.updates("alice"); len(u.Updates) != 25 { // the default read limit; 200 events exist
		t.Fatalf("alice has %d updates on the first page", len(u.Updates))
	}
	stats, err := e.db.Stats(e.ctx)
	if err != nil || stats.Tasks.Claimed != tasks || stats.Tasks.Queued != 0 {
		t.Fatalf("stats = %+v, %v", stats, err)
	}
}

type claimResult struct {
	task    *relay.Task
	err     error
	elapsed time.Duration
}

// startWaiter starts a long-polling claim for slug and returns once its
// first attempt has run (its presence moved), so it is waiting.
func (e *env) startWaiter(ctx context.Context, slug string, wait time.Duration) <-chan claimResult {
	e.t.Helper()
	before, err := e.db.GetAgent(e.ctx, slug)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(chan claimResult, 1)
	go func() {
		start := time.Now()
		task, err := e.db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: slug, Wait: wait})
		out <- claimResult{task, err, time.Since(start)}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := e.db.GetAgent(e.ctx, slug)
		if err != nil {
			e.t.Fatal(err)
		}
		if a.LastSeenAt != before.LastSeenAt {
			return out
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the waiter never made its first claim attempt")
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) result(ch <-chan claimResult, within time.Duration) claimResult {
	e.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		e.t.Fatalf("the waiting claim did not return within %v", within)
		return claimResult{}
	}
}

func TestWaitingClaimIsWokenByPost(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	const wait = 20 * time.Second
	waiter := e.startWaiter(e.ctx, "bob", wait)
	posted := time.Now()
	task := e.post("alice", "bob", "Wake up", 0)
	r := e.result(waiter, wait+5*time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.task == nil {
		t.Fatalf("the waiting claim timed out after %v instead of being woken", r.elapsed)
	}
	if r.task.ID != task.ID || r.task.Status != relay.StatusClaimed {
		t.Fatalf("woken claim got %+v", r.task)
	}
	t.Logf("post → waiting claim returned in %v (wait was %v)", time.Since(posted), wait)
}

func TestWakeUps(t *testing.T) {
	// Each case leaves bob with nothing queued, starts a waiting claim for
	// bob, then does something that must wake it with task.
	cases := []struct {
		name    string
		setup   func(e *env) relay.Task
		trigger func(e *env, task relay.Task) error
	}{
		{"post", func(e *env) relay.Task { return relay.Task{} }, func(e *env, _ relay.Task) error {
			_, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "new", Instructions: "i"})
			return err
		}},
		{"release", func(e *env) relay.Task { return reach(e, relay.StatusClaimed) }, func(e *env, task relay.Task) error {
			_, err := e.db.ReleaseTask(e.ctx, "bob", task.ID, "later")
			return err
		}},
		{"requeue", func(e *env) relay.Task { return reach(e, relay.StatusBlocked) }, func(e *env, task relay.Task) error {
			_, err := e.db.RequeueTask(e.ctx, "alice", task.ID, "unblocked")
			return err
		}},
		{"request changes", func(e *env) relay.Task { return reach(e, relay.StatusCompleted) }, func(e *env, task relay.Task) error {
			_, err := e.db.RequestChanges(e.ctx, "alice", task.ID, "more")
			return err
		}},
		{"lease expiry sweep", func(e *env) relay.Task {
			task := e.post("alice", "bob", title, 0)
			if _, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: 60}); err != nil {
				e.t.Fatal(err)
			}
			return task
		}, func(e *env, task relay.Task) error {
			e.clock.Advance(61 * time.Second)
			res, err := e.db.Sweep(e.ctx)
			if err == nil && res.Requeued != 1 {
				err = fmt.Errorf("sweep requeued %d", res.Requeued)
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			e.agents("alice", "bob")
			task := tc.setup(e)
			waiter := e.startWaiter(e.ctx, "bob", 20*time.Second)
			if err := tc.trigger(e, task); err != nil {
				t.Fatal(err)
			}
			r := e.result(waiter, 15*time.Second)
			if r.err != nil || r.task == nil {
				t.Fatalf("waiter = %+v (after %v), want a task", r, r.elapsed)
			}
			if task.ID != "" && r.task.ID != task.ID {
				t.Fatalf("waiter claimed %s, want %s", r.task.ID, task.ID)
			}
		})
	}
}

func TestCancelDoesNotWake(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	task := reach(e, relay.StatusClaimed)
	waiter := e.startWaiter(e.ctx, "bob", 300*time.Millisecond)
	if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "never mind"); err != nil {
		t.Fatal(err)
	}
	r := e.result(waiter, 10*time.Second)
	if r.err != nil || r.task != nil {
		t.Fatalf("waiter after cancel = %+v", r)
	}
	if r.elapsed < 300*time.Millisecond {
		t.Fatalf("waiter returned after %v, before its deadline", r.elapsed)
	}
}

func TestFruitlessWakeKeepsWaiting(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	w1 := e.startWaiter(e.ctx, "bob", 20*time.Second)
	w2 := e.startWaiter(e.ctx, "bob", 20*time.Second)
	a := e.post("alice", "bob", "A", 0)
	// One waiter gets A; the other was woken for nothing and keeps waiting.
	var first claimResult
	select {
	case first = <-w1:
		w1 = w2
	case first = <-w2:
	case <-time.After(15 * time.Second):
		t.Fatal("no waiter got A")
	}
	if first.err != nil || first.task == nil || first.task.ID != a.ID {
		t.Fatalf("first waiter = %+v", first)
	}
	b := e.post("alice", "bob", "B", 0)
	second := e.result(w1, 15*time.Second)
	if second.err != nil || second.task == nil || second.task.ID != b.ID {
		t.Fatalf("second waiter = %+v, want B", second)
	}
}

func TestWaitingClaimReturnsPromptly(t *testing.T) {
	cases := []struct {
		name string
		stop func(e *env, cancel context.CancelFunc)
	}{
		{"context cancelled", func(e *env, cancel context.CancelFunc) { cancel() }},
		{"store closed", func(e *env, cancel context.CancelFunc) {
			if err := e.db.Close(); err != nil {
				e.t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			e.register("bob")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			waiter := e.startWaiter(ctx, "bob", 20*time.Second)
			stopped := time.Now()
			tc.stop(e, cancel)
			r := e.result(waiter, 5*time.Second)
			if r.err != nil || r.task != nil {
				t.Fatalf("stopped waiter = %+v", r)
			}
			t.Logf("returned %v after being stopped", time.Since(stopped))
		})
	}
	t.Run("closed before claiming", func(t *testing.T) {
		e := newEnv(t, store.Options{})
		e.register("bob")
		e.post("bob", "bob", "never claimed", 0)
		if err := e.db.Close(); err != nil {
			t.Fatal(err)
		}
		task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", Wait: time.Minute})
		if task != nil || err != nil {
			t.Fatalf("claim on a closed store = %+v, %v", task, err)
		}
	})
}

func TestWaitWithoutTaskReturnsNilAtDeadline(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	start := time.Now()
	task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", Wait: 150 * time.Millisecond})
	if err != nil || task != nil {
		t.Fatalf("claim = %+v, %v", task, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("returned after %v, before the wait ended", d)
	}
}

func TestLeaseExpiryBySweep(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	e.claimLease("bob", 60)
	e.clock.Advance(59 * time.Second)
	if res, err := e.db.Sweep(e.ctx); err != nil || res.Requeued != 0 {
		t.Fatalf("sweep before expiry = %+v, %v", res, err)
	}
	// The holder may still report while the lease has passed but no sweep ran.
	e.clock.Advance(2 * time.Second)
	e.report("bob", task.ID, relay.ReportProgress, "still here")
	changes, stop := e.db.Subscribe(64)
	defer stop()
	res, err := e.db.Sweep(e.ctx)
	if err != nil || res.Requeued != 1 {
		t.Fatalf("sweep after expiry = %+v, %v", res, err)
	}
	got := e.task(task.ID)
	if got.Status != relay.StatusQueued || got.ClaimedAt != "" || got.ClaimedVia != "" || got.LeaseExpiresAt != "" {
		t.Fatalf("requeued task = %+v", got)
	}
	last := got.Reports[len(got.Reports)-1]
	if last.Kind != relay.ReportProgress || last.Message != "Lease expired; task returned to the recipient queue." {
		t.Fatalf("last report = %+v", last)
	}
	u := e.updates("alice")
	if !equalStrings(eventTypes(u.Updates), []string{relay.EventTaskClaimed, relay.EventTaskProgress, relay.EventTaskRequeued}) {
		t.Fatalf("alice updates = %v", eventTypes(u.Updates))
	}
	if s := u.Updates[2].Summary; s != "Lease expired for “Fix the bug”; it was requeued." {
		t.Fatalf("requeue summary = %q", s)
	}
	var sawTask, sawEvent bool
	for _, c := range drain(changes, 50*time.Millisecond) {
		sawTask = sawTask || (c.Type == relay.ChangeTask && c.Task.ID == task.ID && c.Task.Status == relay.StatusQueued)
		sawEvent = sawEvent || (c.Type == relay.ChangeJournal && c.Event.Type == relay.EventTaskRequeued)
	}
	if !sawTask || !sawEvent {
		t.Fatalf("sweep published task %v, event %v", sawTask, sawEvent)
	}
	if res, err := e.db.Sweep(e.ctx); err != nil || res.Requeued != 0 {
		t.Fatalf("second sweep = %+v, %v", res, err)
	}
}

func TestLeaseExpiryAtClaimTime(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob", "carol")
	mine := e.post("alice", "bob", title, 0)
	theirs := e.post("alice", "carol", "Carol's", 0)
	e.mustClaim("bob")
	e.mustClaim("carol")
	e.clock.Advance(relay.DefaultLeaseSeconds*time.Second + time.Second)
	again := e.mustClaim("bob")
	if again.ID != mine.ID || again.Status != relay.StatusClaimed {
		t.Fatalf("reclaimed %+v", again)
	}
	if r := again.Reports; len(r) != 1 || r[0].Message != "Lease expired; task returned to the recipient queue." {
		t.Fatalf("reports = %+v", r)
	}
	u := e.updates("alice")
	var forMine []string
	for _, ev := range u.Updates {
		if ev.TaskID == mine.ID {
			forMine = append(forMine, ev.Type)
		}
	}
	if !equalStrings(forMine, []string{relay.EventTaskClaimed, relay.EventTaskRequeued, relay.EventTaskClaimed}) {
		t.Fatalf("events for bob's task = %v", forMine)
	}
	// Bob's claim only requeues bob's expired leases.
	if got := e.task(theirs.ID); got.Status != relay.StatusClaimed {
		t.Fatalf("carol's expired task was touched by bob's claim: %s", got.Status)
	}
}

func TestRenewLeaseKeepsTheTask(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	e.claimLease("bob", 60)
	e.clock.Advance(50 * time.Second)
	renewed, err := e.db.RenewLease(e.ctx, "bob", task.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(100 * time.Second)
	if res, err := e.db.Sweep(e.ctx); err != nil || res.Requeued != 0 {
		t.Fatalf("sweep after renew = %+v, %v (lease %s)", res, err, renewed.LeaseExpiresAt)
	}
	if u := e.updates("alice"); !equalStrings(eventTypes(u.Updates), []string{relay.EventTaskClaimed}) {
		t.Fatalf("renew created events: %v", eventTypes(u.Updates))
	}
}
