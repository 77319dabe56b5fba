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

// Probe reads the resource use of the relay under test, when the caller
// started it in a process of its own (so the figures hold the relay alone,
// not the bench's client).
type Probe interface {
	// Sample reads the relay's use now.
	Sample(ctx context.Context) (Sample, error)
	// Settled reads it after the relay has collected its garbage and
	// returned free memory to the OS (debug.FreeOSMemory): what it holds,
	// without what its last burst of work left for the collector.
	Settled(ctx context.Context) (Sample, error)
}

// Profiler records the relay's CPU profile over the lifecycle phase, when
// the caller asked for one (`bench --cpuprofile`): it is off unless set.
type Profiler interface {
	// StartCPUProfile starts recording just before the phase.
	StartCPUProfile(ctx context.Context) error
	// StopCPUProfile stops and writes the profile just after it.
	StopCPUProfile(ctx context.Context) error
}

// Sample is the relay process's resource use so far.
type Sample struct {
	// CPU is the process's user + system CPU time.
	CPU time.Duration `json:"cpuNs"`
	// RSS is the process's resident memory (VmRSS), in bytes.
	RSS int64 `json:"rssBytes"`
	// Batches is how many write transactions were committed (one fsync
	// each) and Writes how many writes they held (group commit).
	Batches int64 `json:"batches"`
	Writes  int64 `json:"writes"`
	// WriterBusy is how long the store's single writer spent on batches,
	// and Committing the part of it in COMMIT (fsync included).
	WriterBusy time.Duration `json:"writerBusyNs,omitempty"`
	Committing time.Duration `json:"committingNs,omitempty"`
	// RSSAnon is the anonymous part of RSS (RssAnon: heap, stacks), without
	// the pages of the executable and libraries.
	RSSAnon int64 `json:"rssAnonBytes,omitempty"`
	// GoStacks and GoHeap are the Go runtime's goroutine stacks and heap
	// spans in use (runtime.MemStats StackInuse and HeapInuse).
	GoStacks int64 `json:"goStacksBytes,omitempty"`
	GoHeap   int64 `json:"goHeapBytes,omitempty"`
	// GoLive is the Go heap's allocated bytes plus goroutine stacks
	// (HeapAlloc + StackInuse): after a collection, what is live.
	GoLive int64 `json:"goLiveBytes,omitempty"`
	// Goroutines is how many goroutines the relay runs.
	Goroutines int `json:"goroutines,omitempty"`
}

// RelayUsage is what the relay process spent on the lifecycle phase.
type RelayUsage struct {
	// CPUPerCallMs is the relay's CPU time per tool call during the phase,
	// and CPUPerLifecycleMs per lifecycle completed.
	CPUPerCallMs      float64 `json:"cpuPerCallMs"`
	CPUPerLifecycleMs float64 `json:"cpuPerLifecycleMs"`
	// CPUCores is that CPU time over the phase's wall time.
	CPUCores float64 `json:"cpuCores"`
	// Batches and Writes committed during the phase.
	Batches int64 `json:"batches"`
	Writes  int64 `json:"writes"`
	// FsyncsPerLifecycle is Batches / lifecycles (one commit, one fsync,
	// per batch).
	FsyncsPerLifecycle float64 `json:"fsyncsPerLifecycle"`
	// WriterBusy is the share of the phase's wall time the store's single
	// writer spent on batches (every write waits for it: near 1 it is the
	// limit), and WriterCommitting the share it spent in COMMIT.
	WriterBusy       float64 `json:"writerBusy"`
	WriterCommitting float64 `json:"writerCommitting"`
	// RSSAfterLoad is the relay's resident memory right after the phase.
	RSSAfterLoad int64 `json:"rssAfterLoadBytes"`
}

// WaitersResult is the crowd phase: many agents each holding a waiting
// claim_next_task at once.
type WaitersResult struct {
	Waiters int `json:"waiters"`
	// RSSBefore is the relay's memory before the claims were sent, RSSParked
	// with all of them parked, a second after the last was sent (the
	// garbage of their requests included, until the next collection);
	// PerWaiterBytes is the difference per claim.
	RSSBefore      int64 `json:"rssBeforeBytes"`
	RSSParked      int64 `json:"rssParkedBytes"`
	PerWaiterBytes int64 `json:"perWaiterBytes"`
	// StackPerWaiter and HeapPerWaiter split PerWaiterBytes: the growth of
	// the Go runtime's goroutine stacks and heap spans per parked claim
	// (zero when the probe does not report them).
	StackPerWaiter int64 `json:"stackPerWaiterBytes,omitempty"`
	HeapPerWaiter  int64 `json:"heapPerWaiterBytes,omitempty"`
	// Settled: RSSParkedSettled is the relay's memory with all of them
	// parked and RSSGoneSettled once they had gone, each after a garbage
	// collection that returns free memory to the OS, so that the garbage
	// the burst of requests left (until the next collection) does not
	// count; SettledPerWaiterBytes is the difference per claim and
	// LivePerWaiterBytes its live Go heap and stacks.
	RSSParkedSettled      int64 `json:"rssParkedSettledBytes,omitempty"`
	RSSGoneSettled        int64 `json:"rssGoneSettledBytes,omitempty"`
	SettledPerWaiterBytes int64 `json:"settledPerWaiterBytes,omitempty"`
	LivePerWaiterBytes    int64 `json:"livePerWaiterBytes,omitempty"`
	// Wake is the wake-up latency (post sent → that agent's claim answered)
	// with the others still parked.
	Wake Summary `json:"wake"`
}

// usage turns two samples around the lifecycle phase into RelayUsage.
func usage(before, after Sample, l LifecycleResult) RelayUsage {
	u := RelayUsage{Batches: after.Batches - before.Batches, Writes: after.Writes - before.Writes, RSSAfterLoad: after.RSS}
	cpu := after.CPU - before.CPU
	if l.Ops > 0 {
		u.CPUPerCallMs = Ms(cpu) / float64(l.Ops)
	}
	if l.DurationMs > 0 {
		u.CPUCores = Ms(cpu) / l.DurationMs
		u.WriterBusy = Ms(after.WriterBusy-before.WriterBusy) / l.DurationMs
		u.WriterCommitting = Ms(after.Committing-before.Committing) / l.DurationMs
	}
	if l.Completed > 0 {
		u.CPUPerLifecycleMs = Ms(cpu) / float64(l.Completed)
		u.FsyncsPerLifecycle = float64(u.Batches) / float64(l.Completed)
	}
	return u
}

// waiters parks one waiting claim_next_task for each of n fresh agents,
// measures the relay's memory with them parked, then times wake-ups of
// some of them while the rest stay parked.
func (r *runner) waiters(ctx context.Context, n int) (WaitersResult, error) {
	res := WaitersResult{Waiters: n}
	r.pr.linef("bench: waiters: creating %d agents", n)
	agents := make([]agent, n)
	g, gctx := newGroup(ctx)
	var next atomic.Int64
	for range 8 {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return nil
				}
				a, err := r.create(gctx, r.c, r.o.AdminToken, fmt.Sprintf("w%d", i))
				if err != nil {
					return err
				}
				agents[i] = a
			}
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	before, err := r.o.Probe.Sample(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: waiters: %w", err)
	}
	res.RSSBefore = before.RSS

	c := NewClient(r.o.URL, n+16)
	defer c.Close()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make([]chan claimAnswer, n)
	var wrote sync.WaitGroup
	wrote.Add(n)
	r.pr.linef("bench: waiters: parking %d claims (waitMs %d)", n, crowdWaitMs)
	for i, a := range agents {
		answers[i] = make(chan claimAnswer, 1)
		var once sync.Once
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(wrote.Done) }}
		go func() {
			var ans claimAnswer
			ans.err = c.Tool(httptrace.WithClientTrace(pctx, trace), a.token, "claim_next_task", map[string]any{"waitMs": crowdWaitMs}, &ans.res)
			ans.at = time.Now()
			once.Do(wrote.Done)
			answers[i] <- ans
		}()
	}
	wrote.Wait()
	// Let the relay park them: the requests are written, not yet handled.
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	for i := range answers {
		select {
		case a := <-answers[i]:
			return res, fmt.Errorf("bench: waiters: claim %d answered early (%q, %v)", i, a.res.Status, a.err)
		default:
		}
	}
	parked, err := r.o.Probe.Sample(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: waiters: %w", err)
	}
	res.RSSParked = parked.RSS
	res.PerWaiterBytes = (parked.RSS - before.RSS) / int64(n)
	if before.GoStacks > 0 {
		res.StackPerWaiter = (parked.GoStacks - before.GoStacks) / int64(n)
		res.HeapPerWaiter = (parked.GoHeap - before.GoHeap) / int64(n)
	}
	r.pr.linef("bench: waiters: RSS %s → %s with %d parked (%.1f KiB each)", mib(before.RSS), mib(parked.RSS), n, float64(res.PerWaiterBytes)/1024)
	settled, err := r.o.Probe.Settled(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: waiters: %w", err)
	}
	res.RSSParkedSettled = settled.RSS

	samples := min(n, crowdWakeSamples)
	lat := make([]time.Duration, 0, samples)
	for i := range samples {
		var t relay.Task
		args := map[string]any{"recipientSlug": agents[i].slug, "title": fmt.Sprintf("crowd %d", i), "instructions": "Wake-up sample."}
		sent := time.Now()
		if err := r.c.Tool(ctx, r.wakeS.token, "post_task", args, &t); err != nil {
			return res, fmt.Errorf("bench: waiters: post_task: %w", err)
		}
		var a claimAnswer
		select {
		case a = <-answers[i]:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if a.err != nil || a.res.Status != "task" || a.res.Task == nil || a.res.Task.ID != t.ID {
			return res, fmt.Errorf("bench: waiters: claim %d answered %q (%v), not the task just posted", i, a.res.Status, a.err)
		}
		lat = append(lat, a.at.Sub(sent))
	}
	res.Wake = Summarize(lat)
	r.pr.linef("bench: waiters: wake-up with %d parked: p50 %s, p99 %s", n-1, fmtDur(res.Wake.P50), fmtDur(res.Wake.P99))
	cancel()  // the rest give up; their connections close
	c.Close() // and so do those of the claims that were answered
	gone, err := r.settledWithout(ctx, before.Goroutines)
	if err != nil {
		return res, fmt.Errorf("bench: waiters: %w", err)
	}
	res.RSSGoneSettled = gone.RSS
	res.SettledPerWaiterBytes = (settled.RSS - gone.RSS) / int64(n)
	res.LivePerWaiterBytes = (settled.GoLive - gone.GoLive) / int64(n)
	r.pr.linef("bench: waiters: settled RSS %s with them parked, %s once gone (%.1f KiB each)", mib(settled.RSS), mib(gone.RSS), float64(res.SettledPerWaiterBytes)/1024)
	return res, nil
}

// settledWithout waits until the relay runs no more goroutines than it
// did before the claims were parked (give or take a few of its own), so
// that the given-up claims have ended, then takes a settled sample.
func (r *runner) settledWithout(ctx context.Context, goroutines int) (Sample, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := r.o.Probe.Sample(ctx)
		if err != nil {
			return s, err
		}
		if s.Goroutines <= goroutines+crowdSlack {
			break
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("the relay still runs %d goroutines 30 s after the claims gave up (%d before)", s.Goroutines, goroutines)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	return r.o.Probe.Settled(ctx)
}

// Crowd phase settings.
const (
	DefaultWaiters   = 1000
	crowdSlack       = 16 // goroutines of the relay's own that may come and go
	MaxWaiters       = 10_000
	crowdWaitMs      = 25_000
	crowdWakeSamples = 100
)
