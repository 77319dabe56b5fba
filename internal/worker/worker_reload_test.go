//go:build unix

package worker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// reconfigure saves cfg and reloads the worker, as the dashboard does.
func (e *env) reconfigure(m *worker.Manager, cfg relay.WorkerConfig) {
	e.t.Helper()
	if _, err := e.db.SaveWorker(e.ctx, cfg); err != nil {
		e.t.Fatal(err)
	}
	if err := m.Reload(e.ctx, builder); err != nil {
		e.t.Fatal(err)
	}
}

// lateClaim is a relay whose claims wait for their context to end and then
// claim at once: a post handing its task to a claim just as Reload ends it.
// entered gets a value as each claim starts waiting.
type lateClaim struct {
	worker.Relay
	entered chan struct{}
}

func (l lateClaim) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	select {
	case l.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	in.Wait = 0
	return l.Relay.ClaimNext(context.WithoutCancel(ctx), in)
}

// Ensures a task that reaches a claim as Reload or a pause ends it goes
// back to the queue, by the time Reload or SetPaused returns, instead of
// running under the configuration that was replaced or while paused.
func TestTaskClaimedAsTheClaimEndsGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(e *env, m *worker.Manager)
		report string
	}{
		{"reload", func(e *env, m *worker.Manager) {
			cfg := e.cfg
			cfg.Enabled = false
			e.reconfigure(m, cfg)
		}, "reconfigured"},
		{"pause", func(_ *env, m *worker.Manager) { m.SetPaused(true) }, "paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			e := newEnv(t, func(_ *relay.WorkerConfig, o *worker.Options) { o.Relay = lateClaim{o.Relay, entered} })
			m := e.start()
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the worker never claimed")
			}
			task := e.post(operator, "Handed over as the claim ends", "done")
			tc.end(e, m)
			got := e.task(task.ID)
			if got.Status != relay.StatusQueued || !strings.Contains(lastReport(got).Message, tc.report) {
				t.Fatalf("at once: task %s, last report %q", got.Status, lastReport(got).Message)
			}
			holds(t, "the task stays queued", 2*e.opts.Poll, func() bool { return e.task(task.ID).Status == relay.StatusQueued })
			e.harness.mu.Lock()
			asked := len(e.harness.requests)
			e.harness.mu.Unlock()
			if asked != 0 {
				t.Fatalf("the harness was asked to run %d time(s)", asked)
			}
		})
	}
}

// Ensures a worker runs one task at a time: Reloads in a row during a run,
// or disabling and enabling it, or deleting it and setting it up again,
// start no run before the first ends (which would also clear its CLI home
// under the first run).
func TestReloadsDuringARunKeepOneRunAtATime(t *testing.T) {
	disabled := func(e *env) relay.WorkerConfig { c := e.cfg; c.Enabled = false; return c }
	tests := []struct {
		name  string
		steps func(e *env, m *worker.Manager)
	}{
		{"reloads", func(e *env, m *worker.Manager) {
			for range 2 {
				e.reconfigure(m, e.cfg)
			}
		}},
		{"disabled and enabled", func(e *env, m *worker.Manager) {
			e.reconfigure(m, disabled(e))
			e.reconfigure(m, e.cfg)
		}},
		{"deleted and set up again", func(e *env, m *worker.Manager) {
			if err := e.db.DeleteWorker(e.ctx, builder); err != nil {
				e.t.Fatal(err)
			}
			if err := m.Reload(e.ctx, builder); err != nil {
				e.t.Fatal(err)
			}
			e.reconfigure(m, e.cfg)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			m := e.start()
			first := e.post(operator, "Sleep", "sleep")
			child, grandchild := e.pids() // the first run has started
			tt.steps(e, m)
			second := e.post(operator, "Second", "done")
			holds(t, "the second task queued while the first runs", 2*e.opts.Poll, func() bool { return e.task(second.ID).Status == relay.StatusQueued })
			if _, err := e.db.CancelTask(e.ctx, operator, first.ID, "Enough."); err != nil {
				t.Fatal(err)
			}
			waitGone(t, child, grandchild)
			if got := e.finished(second.ID); got.Status != relay.StatusCompleted {
				t.Fatalf("the second task after the first: %s", got.Status)
			}
		})
	}
}

// Ensures Reload applies a disabled or deleted configuration.
func TestReload(t *testing.T) {
	e := newEnv(t, nil)
	m := e.start()
	poll.Until(t, "idle", 5*time.Second, func() bool { return e.status().State == relay.WorkerIdle })
	cfg := e.cfg
	cfg.Enabled = false
	e.reconfigure(m, cfg)
	if s := e.status(); s.State != relay.WorkerDisabled {
		t.Fatalf("state %s", s.State)
	}
	task := e.post(operator, "Nobody runs this", "done")
	holds(t, "queued while disabled", 2*e.opts.Poll, func() bool { return e.task(task.ID).Status == relay.StatusQueued })
	cfg.Enabled = true
	e.reconfigure(m, cfg)
	e.finished(task.ID)
	if err := e.db.DeleteWorker(e.ctx, builder); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(e.ctx, builder); err != nil {
		t.Fatal(err)
	}
	if len(m.Statuses()) != 0 {
		t.Fatalf("statuses after delete: %+v", m.Statuses())
	}
}

// Ensures a Reload while a task runs lets the CLI go on, and the new
// configuration applies to the next task.
func TestReloadWhileRunning(t *testing.T) {
	e := newEnv(t, nil)
	m := e.start()
	task := e.post(operator, "Sleep", "sleep")
	child, grandchild := e.pids()
	cfg := e.cfg
	cfg.TimeoutMinutes = 5
	e.reconfigure(m, cfg)
	holds(t, "the run going on", time.Second, func() bool {
		s := e.status()
		return alive(child) && s.State == relay.WorkerRunning && s.TimeoutMinutes == 5 && e.task(task.ID).Status == relay.StatusClaimed
	})
	if _, err := e.db.CancelTask(e.ctx, operator, task.ID, "Enough."); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child, grandchild)
	next := e.post(operator, "Next", "done")
	if got := e.finished(next.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("next task: %s", got.Status)
	}
}

// Ensures a deleted worker's OnRemoved (which removes its CLI homes) is
// called once no run of it is left: once its loop stopped for a worker
// between runs (at once for a slug without a worker), at the end of the run for one that is
// running, and never for a worker whose slug a new worker took before its
// last run ended. Called while the run goes on, the hook would pull its
// CLI home from under it, so the test can fail.
func TestDeletedWorkerRemovedAfterItsRun(t *testing.T) {
	var mu sync.Mutex
	var removed []string
	calls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(removed)
	}
	e := newEnv(t, func(_ *relay.WorkerConfig, o *worker.Options) {
		o.OnRemoved = func(slug string) error {
			mu.Lock()
			defer mu.Unlock()
			removed = append(removed, slug)
			return nil
		}
	})
	m := e.start()
	remove := func() {
		t.Helper()
		if err := e.db.DeleteWorker(e.ctx, builder); err != nil {
			t.Fatal(err)
		}
		if err := m.Reload(e.ctx, builder); err != nil {
			t.Fatal(err)
		}
	}

	// Deleted while it runs: removed when the run ends.
	task := e.post(operator, "Sleep", "sleep")
	child, grandchild := e.pids()
	remove()
	if got := calls(); len(got) != 0 || !alive(child) {
		t.Fatalf("removed %v while the run goes on (alive %v)", got, alive(child))
	}
	if _, err := e.db.CancelTask(e.ctx, operator, task.ID, "Enough."); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child, grandchild)
	waitFor(t, "the removal after the run", 10*time.Second, func() bool { return slices.Equal(calls(), []string{builder}) })

	// Between runs, or without a worker: once the loop has stopped.
	e.reconfigure(m, e.cfg)
	remove()
	remove()
	waitFor(t, "the removals", 10*time.Second, func() bool { return len(calls()) == 3 })
	if got := calls(); !slices.Equal(got, []string{builder, builder, builder}) {
		t.Fatalf("removed %v, want builder three times", got)
	}

	// Deleted while it runs, then set up again: the new worker keeps it.
	e.reconfigure(m, e.cfg)
	task = e.post(operator, "Sleep", "sleep")
	child, grandchild = e.pids()
	remove()
	e.reconfigure(m, e.cfg)
	if _, err := e.db.CancelTask(e.ctx, operator, task.ID, "Enough."); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child, grandchild)
	// Stop returns once every run has ended, the replaced one included.
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := calls(); len(got) != 3 {
		t.Fatalf("removed %v after a run of a worker set up again", got)
	}
}

// failOnce is a relay whose first claim fails.
type failOnce struct {
	worker.Relay
	once sync.Once
}

func (f *failOnce) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	var err error
	f.once.Do(func() { err = errors.New("the relay is busy") })
	if err != nil {
		return nil, err
	}
	return f.Relay.ClaimNext(ctx, in)
}

// Ensures a worker deleted just as its loop was handed a task (after the
// claim, before the run starts) is removed (OnRemoved, which removes its
// CLI homes) only once that run has ended, not under it. The gap is held
// open by the status the loop publishes there (its claim error cleared).
// Removed when Reload finds no run yet, the home goes under the run (and
// a worker set up again would start a second run in it), so the test can
// fail.
func TestWorkerDeletedAsItClaimsRemovedAfterTheRun(t *testing.T) {
	gap, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var failed bool
	var removed []relay.TaskStatus
	var e *env
	var task relay.Task
	e = newEnv(t, func(_ *relay.WorkerConfig, o *worker.Options) {
		o.Relay = &failOnce{Relay: o.Relay}
		status := o.OnStatus
		o.OnStatus = func(s relay.WorkerStatus) {
			status(s)
			mu.Lock()
			hold := failed && s.State == relay.WorkerIdle
			failed = failed || s.State == relay.WorkerError
			if hold {
				failed = false
			}
			mu.Unlock()
			if hold {
				close(gap)
				<-release
			}
		}
		o.OnRemoved = func(string) error {
			mu.Lock()
			defer mu.Unlock()
			removed = append(removed, e.task(task.ID).Status)
			return nil
		}
	})
	m := e.start()
	waitFor(t, "the failed claim", 10*time.Second, func() bool { return e.status().State == relay.WorkerError })
	task = e.post(operator, "Claimed as the worker goes", "done")
	select {
	case <-gap:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never reached the run")
	}
	if err := e.db.DeleteWorker(e.ctx, builder); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(e.ctx, builder); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	early := slices.Clone(removed)
	mu.Unlock()
	close(release)
	if len(early) != 0 {
		t.Fatalf("removed before the run of its claimed task: %v", early)
	}
	waitFor(t, "the task claimed done", 30*time.Second, func() bool { return e.task(task.ID).Status == relay.StatusCompleted })
	waitFor(t, "the removal", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(removed) == 1 })
	if removed[0] != relay.StatusCompleted {
		t.Fatalf("removed while its task was %s", removed[0])
	}
}

// Ensures a slow OnRemoved (a removal of CLI homes that hangs) stalls
// neither Reload nor the statuses (the dashboard, shutdown), and a worker
// set up again under the slug starts its runs only once it returned.
// Called with the manager locked, it stalls them all, so the test can
// fail.
func TestSlowRemovalStallsNothing(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	e := newEnv(t, func(_ *relay.WorkerConfig, o *worker.Options) {
		o.OnRemoved = func(string) error {
			entered <- struct{}{}
			<-release
			return nil
		}
	})
	m := e.start()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); fn() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s waits for the removal", what)
		}
	}
	if err := e.db.DeleteWorker(e.ctx, builder); err != nil {
		t.Fatal(err)
	}
	within("Reload", func() { _ = m.Reload(e.ctx, builder) })
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("OnRemoved was never called")
	}
	within("Statuses", func() { m.Statuses() })
	within("setting it up again", func() { e.reconfigure(m, e.cfg) })
	task := e.post(operator, "After the removal", "done")
	holds(t, "the task waits for the removal", 2*e.opts.Poll, func() bool { return e.task(task.ID).Status == relay.StatusQueued })
	close(release)
	if got := e.finished(task.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("the task after the removal: %s", got.Status)
	}
}
