package bench

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Operation names in the per-tool latency table.
const (
	OpPost           = "post_task"
	OpClaim          = "claim_next_task"
	OpClaimWait      = "claim_next_task (waitMs)"
	OpReportProgress = "report_task (progress)"
	OpReportComplete = "report_task (completed)"
	OpReadUpdates    = "read_updates"
)

// longPollMs is how long a lifecycle worker waits for work once its queue
// is empty.
const longPollMs = 5000

// claimResult is claim_next_task's answer.
type claimResult struct {
	Status string      `json:"status"`
	Task   *relay.Task `json:"task"`
}

// timed calls a tool as agent a (on its relay) and records its latency
// (or failure) under op.
func (r *runner) timed(ctx context.Context, rec *Recorder, op string, a agent, tool string, args, out any) error {
	t0 := time.Now()
	err := a.c.Tool(ctx, a.token, tool, args, out)
	if err != nil {
		if !isCanceled(err) {
			rec.Fail(op)
		}
		return fmt.Errorf("bench: %s: %w", op, err)
	}
	rec.Add(op, time.Since(t0))
	return nil
}

// lifecycle runs the full task lifecycle with every agent at once. Agent i
// posts its share of the tasks to agent i+1, keeping up to Window of them
// open; agent i+1's worker claims each one (at once, or by waiting when its
// queue is empty), reports progress and completes it, and tells the sender,
// who then reads its updates and must find the task-completed event.
func (r *runner) lifecycle(ctx context.Context) (LifecycleResult, error) {
	n := len(r.agent)
	rec := NewRecorder()
	done := make([]chan string, n)
	for i := range done {
		done[i] = make(chan string, share(r.o.Tasks, n, i)+1)
	}
	var completed, eventsRead, idle, afterWait atomic.Int64
	r.pr.linef("bench: lifecycle: %d agents, %d tasks, %d open per sender", n, r.o.Tasks, r.o.Window)
	stop := r.pr.every(2*time.Second, func() string {
		return fmt.Sprintf("bench: lifecycle: %d/%d completed", completed.Load(), r.o.Tasks)
	})
	g, gctx := newGroup(ctx)
	start := time.Now()
	for i := range n {
		sender, peer := r.agent[i], r.agent[(i+1)%n]
		if len(r.worker) > 0 {
			peer = r.worker[i] // across the mesh
		}
		total := share(r.o.Tasks, n, i)
		g.Go(func() error {
			got, err := r.send(gctx, rec, i, sender, peer, total, done[i], &completed)
			eventsRead.Add(int64(got.events))
			return err
		})
		worker, from := peer, i
		g.Go(func() error {
			st, err := r.work(gctx, rec, worker, sender.slug, total, done[from])
			idle.Add(int64(st.idle))
			afterWait.Add(int64(st.afterWait))
			return err
		})
	}
	err := g.Wait()
	elapsed := time.Since(start)
	stop()
	if err != nil {
		return LifecycleResult{}, err
	}
	ok, failed := rec.Total()
	res := LifecycleResult{
		Agents: n, Window: r.o.Window, Tasks: r.o.Tasks,
		Completed: int(completed.Load()), EventsRead: int(eventsRead.Load()),
		Ops: ok, Errors: failed, DurationMs: Ms(elapsed),
		LifecyclesPerSec: float64(completed.Load()) / elapsed.Seconds(),
		OpsPerSec:        float64(ok) / elapsed.Seconds(),
		IdleClaims:       int(idle.Load()),
		ClaimedAfterWait: int(afterWait.Load()),
		Tools:            rec.Stats(OpPost, OpClaim, OpClaimWait, OpReportProgress, OpReportComplete, OpReadUpdates),
	}
	if res.Completed != res.Tasks || res.EventsRead != 3*res.Tasks {
		return res, fmt.Errorf("bench: lifecycle: %d of %d tasks completed, %d of %d events read", res.Completed, res.Tasks, res.EventsRead, 3*res.Tasks)
	}
	r.pr.linef("bench: lifecycle: %d lifecycles in %.2fs (%.0f/s, %.0f ops/s)", res.Completed, elapsed.Seconds(), res.LifecyclesPerSec, res.OpsPerSec)
	return res, nil
}

type sent struct{ completed, events int }

// send is sender i's loop: post while fewer than Window tasks are open,
// otherwise wait for the peer to finish one and read updates.
func (r *runner) send(ctx context.Context, rec *Recorder, i int, sender, peer agent, total int, done <-chan string, completed *atomic.Int64) (sent, error) {
	var out sent
	open := map[string]bool{}     // posted, completion not yet read
	signaled := map[string]bool{} // worker says completed, event not yet read
	counts := map[string]int{}
	posted := 0
	// In a mesh: when the sender's relay had not yet heard of a signaled
	// completion, and how long to wait before reading again.
	waitingSince := map[string]time.Time{}
	var retry, lastRetry time.Duration
	for posted < total || len(open) > 0 {
		if posted < total && len(open) < r.o.Window {
			var t relay.Task
			args := map[string]any{
				"recipientSlug": peer.slug,
				"title":         fmt.Sprintf("bench task %d.%d", i, posted),
				"instructions":  "Load-generator task: claim it, report progress, complete it.",
			}
			if err := r.timed(ctx, rec, OpPost, sender, "post_task", args, &t); err != nil {
				return out, err
			}
			if t.Status != relay.StatusQueued || t.RecipientSlug != peer.slug {
				return out, fmt.Errorf("bench: post_task answered status %q to %q", t.Status, t.RecipientSlug)
			}
			open[t.ID] = true
			posted++
			continue
		}
		if retry > 0 {
			// In a mesh a completion reaches the sender's relay a moment
			// after the worker's: read again shortly, or on the next.
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case id := <-done:
				signaled[id] = true
			case <-time.After(retry):
			}
		} else {
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case id := <-done:
				signaled[id] = true
			}
		}
	drain:
		for {
			select {
			case id := <-done:
				signaled[id] = true
			default:
				break drain
			}
		}
		var u relay.Updates
		if err := r.timed(ctx, rec, OpReadUpdates, sender, "read_updates", map[string]any{"limit": relay.MaxUpdatesLimit}, &u); err != nil {
			return out, err
		}
		if u.MayHaveMissedUpdates {
			return out, fmt.Errorf("bench: %s: read_updates says updates were missed", sender.slug)
		}
		for _, ev := range u.Updates {
			if ev.RecipientSlug != sender.slug {
				return out, fmt.Errorf("bench: %s received an event for %s", sender.slug, ev.RecipientSlug)
			}
			counts[ev.Type]++
			out.events++
			if ev.Type == relay.EventTaskCompleted {
				if !open[ev.TaskID] {
					return out, fmt.Errorf("bench: %s: task-completed for a task it has no open record of (%s)", sender.slug, ev.TaskID)
				}
				delete(open, ev.TaskID)
				delete(signaled, ev.TaskID)
				delete(waitingSince, ev.TaskID)
				out.completed++
				completed.Add(1)
			}
		}
		retry = 0
		for id := range signaled {
			if !open[id] {
				continue
			}
			if len(r.worker) == 0 {
				return out, fmt.Errorf("bench: %s: task %s was completed but read_updates has no task-completed for it", sender.slug, id)
			}
			if since, ok := waitingSince[id]; !ok {
				waitingSince[id] = time.Now()
			} else if time.Since(since) > meshWait {
				return out, fmt.Errorf("bench: %s: task %s was completed on the peer relay %s ago, and no task-completed reached its sender", sender.slug, id, meshWait)
			}
			retry = min(max(2*lastRetry, time.Millisecond), 20*time.Millisecond)
		}
		lastRetry = retry
	}
	if counts[relay.EventTaskClaimed] != total || counts[relay.EventTaskProgress] != total || counts[relay.EventTaskCompleted] != total {
		return out, fmt.Errorf("bench: %s read %v, want %d of each of claimed, progress and completed", sender.slug, counts, total)
	}
	return out, nil
}

type worked struct{ idle, afterWait int }

// work is a worker's loop: claim at once, or wait when the queue is empty;
// report progress, complete, and tell the sender.
func (r *runner) work(ctx context.Context, rec *Recorder, w agent, from string, total int, done chan<- string) (worked, error) {
	var st worked
	for finished := 0; finished < total; {
		var c claimResult
		if err := r.timed(ctx, rec, OpClaim, w, "claim_next_task", map[string]any{"waitMs": 0}, &c); err != nil {
			return st, err
		}
		if c.Status != "task" {
			st.idle++
			if err := r.timed(ctx, rec, OpClaimWait, w, "claim_next_task", map[string]any{"waitMs": longPollMs}, &c); err != nil {
				return st, err
			}
			if c.Status != "task" {
				continue
			}
			st.afterWait++
		}
		t := c.Task
		if t == nil || t.Status != relay.StatusClaimed || t.RecipientSlug != w.slug || t.SenderSlug != from {
			return st, fmt.Errorf("bench: %s claimed an unexpected task: %+v", w.slug, t)
		}
		prog := map[string]any{"taskId": t.ID, "kind": relay.ReportProgress, "message": "Halfway there."}
		if err := r.timed(ctx, rec, OpReportProgress, w, "report_task", prog, nil); err != nil {
			return st, err
		}
		var fin relay.Task
		comp := map[string]any{"taskId": t.ID, "kind": relay.ReportCompleted, "message": "Done.", "result": "ok"}
		if err := r.timed(ctx, rec, OpReportComplete, w, "report_task", comp, &fin); err != nil {
			return st, err
		}
		if fin.Status != relay.StatusCompleted || len(fin.Reports) != 2 {
			return st, fmt.Errorf("bench: task %s after completing: status %q with %d reports", t.ID, fin.Status, len(fin.Reports))
		}
		finished++
		done <- t.ID
	}
	return st, nil
}

// wake times post_task → a waiting claim_next_task's answer.
func (r *runner) wake(ctx context.Context) (WakeResult, error) {
	n := r.o.WakeSamples
	lat := make([]time.Duration, 0, n)
	post := make([]time.Duration, 0, n)
	r.pr.linef("bench: wake-up: %d samples", n)
	var count atomic.Int64
	stop := r.pr.every(2*time.Second, func() string {
		return fmt.Sprintf("bench: wake-up: %d/%d samples", count.Load(), n)
	})
	defer stop()
	for i := range n {
		l, p, err := r.wakeOnce(ctx, i)
		if err != nil {
			return WakeResult{}, err
		}
		lat = append(lat, l)
		post = append(post, p)
		count.Add(1)
	}
	res := WakeResult{Samples: len(lat), Latency: Summarize(lat), Post: Summarize(post)}
	r.pr.linef("bench: wake-up: p50 %s, p99 %s", fmtDur(res.Latency.P50), fmtDur(res.Latency.P99))
	return res, nil
}

type claimAnswer struct {
	res claimResult
	err error
	at  time.Time
}

func (r *runner) wakeOnce(ctx context.Context, i int) (latency, post time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wrote := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) }}
	answer := make(chan claimAnswer, 1)
	go func() {
		var a claimAnswer
		a.err = r.wakeR.c.Tool(httptrace.WithClientTrace(ctx, trace), r.wakeR.token, "claim_next_task", map[string]any{"waitMs": 20000}, &a.res)
		a.at = time.Now()
		answer <- a
	}()
	early := func(a claimAnswer) error {
		if a.err != nil {
			return fmt.Errorf("bench: wake-up: waiting claim: %w", a.err)
		}
		return fmt.Errorf("bench: wake-up: the waiting claim answered %q before the task was posted", a.res.Status)
	}
	select {
	case <-wrote:
	case a := <-answer:
		return 0, 0, early(a)
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	// Give the relay time to park the claim: the request is on the wire but
	// the handler may not have registered its waiter yet.
	settle := time.NewTimer(r.o.WakeSettle)
	select {
	case <-settle.C:
	case a := <-answer:
		settle.Stop()
		return 0, 0, early(a)
	case <-ctx.Done():
		settle.Stop()
		return 0, 0, ctx.Err()
	}
	var t relay.Task
	args := map[string]any{"recipientSlug": r.wakeR.slug, "title": fmt.Sprintf("wake %d", i), "instructions": "Wake-up sample."}
	sentAt := time.Now()
	if err := r.wakeS.c.Tool(ctx, r.wakeS.token, "post_task", args, &t); err != nil {
		return 0, 0, fmt.Errorf("bench: wake-up: post_task: %w", err)
	}
	post = time.Since(sentAt)
	var a claimAnswer
	select {
	case a = <-answer:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	if a.err != nil {
		return 0, 0, fmt.Errorf("bench: wake-up: waiting claim: %w", a.err)
	}
	if a.res.Status != "task" || a.res.Task == nil || a.res.Task.ID != t.ID {
		return 0, 0, fmt.Errorf("bench: wake-up: the waiting claim answered %q, not the task just posted", a.res.Status)
	}
	latency = a.at.Sub(sentAt)
	done := map[string]any{"taskId": t.ID, "kind": relay.ReportCompleted, "message": "Woken."}
	if err := r.wakeR.c.Tool(ctx, r.wakeR.token, "report_task", done, nil); err != nil {
		return 0, 0, fmt.Errorf("bench: wake-up: complete: %w", err)
	}
	return latency, post, nil
}

// queueClaims fills q's queue with size tasks, then times claims (waitMs
// 0) at that depth; each claimed task is released again so the depth stays
// the same.
func (r *runner) queueClaims(ctx context.Context, q agent, size int) (QueueResult, error) {
	res := QueueResult{Size: size}
	var err error
	seedStart := time.Now()
	if r.o.Service != nil {
		res.SeedVia = "relay.Service.PostTask in process (one transaction per task, 8 concurrent)"
		err = r.seed(ctx, q, size, func(ctx context.Context, k int) error {
			_, err := r.o.Service.PostTask(ctx, relay.PostTaskInput{
				SenderSlug: r.wakeS.slug, RecipientSlug: q.slug,
				Title: fmt.Sprintf("queued %d", k), Instructions: "Queue-depth filler.",
			})
			return err
		})
	} else {
		res.SeedVia = "MCP post_task over HTTP (one transaction per task, 8 concurrent)"
		err = r.seed(ctx, q, size, func(ctx context.Context, k int) error {
			args := map[string]any{"recipientSlug": q.slug, "title": fmt.Sprintf("queued %d", k), "instructions": "Queue-depth filler."}
			return r.c.Tool(ctx, r.wakeS.token, "post_task", args, nil)
		})
	}
	if err != nil {
		return res, err
	}
	seed := time.Since(seedStart)
	res.SeedMs, res.SeedPerSec = Ms(seed), float64(size)/seed.Seconds()
	res.QueuedAtStart = size
	r.pr.linef("bench: queue %d: seeded in %.1fs (%.0f tasks/s); timing %d claims", size, seed.Seconds(), res.SeedPerSec, r.o.ClaimSamples)
	claims := make([]time.Duration, 0, r.o.ClaimSamples)
	releases := make([]time.Duration, 0, r.o.ClaimSamples)
	for range r.o.ClaimSamples {
		var c claimResult
		t0 := time.Now()
		if err := r.c.Tool(ctx, q.token, "claim_next_task", map[string]any{"waitMs": 0}, &c); err != nil {
			return res, fmt.Errorf("bench: queue %d: claim: %w", size, err)
		}
		claims = append(claims, time.Since(t0))
		if c.Status != "task" || c.Task == nil {
			return res, fmt.Errorf("bench: queue %d: claim found no task", size)
		}
		t0 = time.Now()
		args := map[string]any{"taskId": c.Task.ID, "reason": "Bench: back to the queue."}
		if err := r.c.Tool(ctx, q.token, "release_task", args, nil); err != nil {
			return res, fmt.Errorf("bench: queue %d: release: %w", size, err)
		}
		releases = append(releases, time.Since(t0))
	}
	res.Claim, res.Release = Summarize(claims), Summarize(releases)
	r.pr.linef("bench: queue %d: claim p50 %s, p99 %s", size, fmtDur(res.Claim.P50), fmtDur(res.Claim.P99))
	return res, nil
}

// seedWorkers is how many posts run at once while filling a queue.
const seedWorkers = 8

// seed calls post(k) for k in [0, size) from seedWorkers goroutines, with a
// progress line every few seconds.
func (r *runner) seed(ctx context.Context, q agent, size int, post func(context.Context, int) error) error {
	var next, doneN atomic.Int64
	start := time.Now()
	stop := r.pr.every(3*time.Second, func() string {
		d := doneN.Load()
		return fmt.Sprintf("bench: queue %d: seeding %d/%d (%.0f tasks/s)", size, d, size, float64(d)/time.Since(start).Seconds())
	})
	defer stop()
	g, gctx := newGroup(ctx)
	for range min(seedWorkers, size) {
		g.Go(func() error {
			for {
				k := int(next.Add(1)) - 1
				if k >= size {
					return nil
				}
				if err := post(gctx, k); err != nil {
					return fmt.Errorf("bench: seed queue of %s: %w", q.slug, err)
				}
				doneN.Add(1)
			}
		})
	}
	return g.Wait()
}

// commitMax bounds each half of the commit-rate phase.
const commitMax = 20000

// commits measures single-row write transactions back to back: heartbeat
// through the in-process relay.Service (when there is one) and the
// heartbeat tool over MCP. Both are one presence UPDATE in one BEGIN
// IMMEDIATE transaction, so the first is the store's commit rate on this
// disk and the difference is the cost of HTTP and MCP.
func (r *runner) commits(ctx context.Context) (CommitResult, error) {
	res := CommitResult{WindowMs: Ms(r.o.CommitWindow)}
	r.pr.linef("bench: commit rate: heartbeats back to back for %s each", r.o.CommitWindow)
	loop := func(f func() error) (float64, Summary, error) {
		var lat []time.Duration
		start := time.Now()
		for time.Since(start) < r.o.CommitWindow && len(lat) < commitMax {
			t0 := time.Now()
			if err := f(); err != nil {
				return 0, Summary{}, err
			}
			lat = append(lat, time.Since(t0))
		}
		return float64(len(lat)) / time.Since(start).Seconds(), Summarize(lat), nil
	}
	var err error
	if r.o.Service != nil {
		res.ServicePerSec, res.Service, err = loop(func() error {
			_, err := r.o.Service.Heartbeat(ctx, r.wakeS.slug)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("bench: commit rate: Service.Heartbeat: %w", err)
		}
	}
	res.MCPPerSec, res.MCP, err = loop(func() error {
		return r.c.Tool(ctx, r.wakeS.token, "heartbeat", nil, nil)
	})
	if err != nil {
		return res, fmt.Errorf("bench: commit rate: heartbeat tool: %w", err)
	}
	r.pr.linef("bench: commit rate: %.0f/s in process, %.0f/s over MCP", res.ServicePerSec, res.MCPPerSec)
	return res, nil
}
