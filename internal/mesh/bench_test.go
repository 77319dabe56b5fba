//go:build unix

// The benchmarks read the process's CPU time with getrusage.

package mesh

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// The figures of docs/performance.md's mesh section, single relay beside
// two relays over an embedded NATS server, in one run:
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/mesh/

// pair is where a sender posts and where the recipient claims.
type pair struct {
	sender, owner relay.Service
	changes       func(int) (<-chan relay.Change, func())
	nodes         []*Node     // the two relays' nodes across the mesh, none for one relay
	dbs           []*store.DB // the relays' stores: one, or the two across the mesh
}

func benchPairs(b *testing.B, mode string, n int) (pair, []string, []string) {
	b.Helper()
	a := startRelay(b, "relay-a", "")
	p := pair{sender: a.svc, owner: a.svc, changes: a.db.Subscribe, dbs: []*store.DB{a.db}}
	var senders, recipients []string
	for i := range n {
		senders = append(senders, fmt.Sprintf("sender-%d", i))
		recipients = append(recipients, fmt.Sprintf("worker-%d", i))
	}
	for _, s := range senders {
		createAgentB(b, a, s)
	}
	owner := a
	if mode == "mesh" {
		owner = startRelay(b, "relay-b", "", a.node.InviteURL())
		trustEachOther(b, a, owner)
		p.owner = owner.svc
		p.nodes = []*Node{a.node, owner.node}
		p.dbs = append(p.dbs, owner.db)
	}
	for _, r := range recipients {
		createAgentB(b, owner, r)
	}
	if mode == "mesh" {
		deadline := time.Now().Add(30 * time.Second)
		for {
			as, err := a.svc.ListAgents(context.Background(), true)
			if err != nil {
				b.Fatal(err)
			}
			known := 0
			for _, ag := range as {
				if ag.Relay == "relay-b" {
					known++
				}
			}
			if known == n {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("A knows %d of %d remote agents", known, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return p, senders, recipients
}

func createAgentB(b *testing.B, r *testRelay, slug string) {
	b.Helper()
	if _, _, err := r.svc.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-output"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := r.svc.Heartbeat(context.Background(), slug); err != nil {
		b.Fatal(err)
	}
}

// processCPU is the CPU time (user and system) this process has used: on
// a shared machine, CPU per lifecycle moves less with the load than the
// rate does.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// written sums the batches (commits) and writes of dbs.
func written(dbs []*store.DB) (commits, writes int64) {
	for _, db := range dbs {
		s := db.WriteStats()
		commits += s.Batches
		writes += s.Writes
	}
	return commits, writes
}

// writerStats is each of dbs' writers' work so far (WriteStats).
func writerStats(dbs []*store.DB) []store.WriteStats {
	stats := make([]store.WriteStats, len(dbs))
	for i, db := range dbs {
		stats[i] = db.WriteStats()
	}
	return stats
}

// published counts the messages nodes published (and NATS stored), and
// the outbox reads they took.
func published(nodes []*Node) (msgs, reads int64) {
	for _, nd := range nodes {
		msgs += nd.messages.Load()
		reads += nd.reads.Load()
	}
	return msgs, reads
}

func percentile(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(float64(len(d)-1) * p)
	return float64(d[i].Microseconds()) / 1000
}

// BenchmarkWake times post_task on the sender's relay to a claim waiting on
// the recipient's relay returning it.
func BenchmarkWake(b *testing.B) {
	for _, mode := range []string{"single", "mesh"} {
		b.Run(mode, func(b *testing.B) {
			p, senders, recipients := benchPairs(b, mode, 1)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				got := make(chan time.Time, 1)
				go func() {
					task, err := p.owner.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: recipients[0], Wait: 20 * time.Second, Via: relay.ViaChat})
					if err != nil || task == nil {
						b.Errorf("claim: %v %v", task, err)
					}
					got <- time.Now()
				}()
				time.Sleep(25 * time.Millisecond) // let the claim park, as the bench's wake-up phase does
				t0 := time.Now()
				if _, err := p.sender.PostTask(ctx, relay.PostTaskInput{SenderSlug: senders[0], RecipientSlug: recipients[0], Title: "wake", Instructions: "x"}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-got).Sub(t0))
			}
			b.StopTimer()
			b.ReportMetric(percentile(lat, 0.5), "p50-ms")
			b.ReportMetric(percentile(lat, 0.99), "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLifecycle runs full lifecycles with 8 sender/recipient pairs:
// post on the sender's relay, claim and complete on the owner's, and the
// sender's relay has the task-completed update. Each pair runs its
// lifecycles one after another, so the rate is 8 over a lifecycle's
// latency: the median of each step (post, claim, report, and the wait for
// the update) and the cores busy say whether the latency or the CPU bounds
// it.
func BenchmarkLifecycle(b *testing.B) {
	const pairs = 8
	for _, mode := range []string{"single", "mesh"} {
		b.Run(mode, func(b *testing.B) {
			p, senders, recipients := benchPairs(b, mode, pairs)
			ctx := context.Background()
			changes, stop := p.changes(1 << 16)
			defer stop()
			var mu sync.Mutex
			waiting := map[string]chan struct{}{}
			go func() {
				for c := range changes {
					if c.Type == relay.ChangeJournal && c.Event.Type == relay.EventTaskCompleted {
						mu.Lock()
						if w, ok := waiting[c.Event.TaskID]; ok {
							close(w)
							delete(waiting, c.Event.TaskID)
						}
						mu.Unlock()
					}
				}
			}()
			var left atomic.Int64
			left.Store(int64(b.N))
			took := make([][]steps, pairs) // each pair's, so no lock
			sent0, reads0 := published(p.nodes)
			commits0, writes0 := written(p.dbs)
			busy0 := writerStats(p.dbs)
			b.ResetTimer()
			cpu0 := processCPU(b)
			start := time.Now()
			var wg sync.WaitGroup
			for i := range pairs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						done := make(chan struct{})
						var st steps
						t := time.Now()
						task, err := p.sender.PostTask(ctx, relay.PostTaskInput{SenderSlug: senders[i], RecipientSlug: recipients[i], Title: "life", Instructions: "x"})
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						waiting[task.ID] = done
						mu.Unlock()
						st.post, t = st.lap(t)
						got, err := p.owner.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: recipients[i], Wait: 20 * time.Second, Via: relay.ViaChat})
						if err != nil || got == nil || got.ID != task.ID {
							b.Errorf("claim: %v %v", got, err)
							return
						}
						st.claim, t = st.lap(t)
						if _, err := p.owner.ReportTask(ctx, relay.ReportInput{ReporterSlug: recipients[i], TaskID: task.ID, Kind: relay.ReportCompleted, Message: "ok"}); err != nil {
							b.Error(err)
							return
						}
						st.report, t = st.lap(t)
						select {
						case <-done:
						case <-time.After(30 * time.Second):
							b.Errorf("task %s: no completed update on the sender's relay", task.ID)
							return
						}
						st.update, _ = st.lap(t)
						took[i] = append(took[i], st)
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			cpu := processCPU(b) - cpu0
			b.StopTimer()
			if len(p.nodes) > 0 {
				// Three changes travel (the post, the claim, the
				// completion); a message carries what one read of the
				// outbox found for a relay, so fewer messages than that.
				// msgs/read is the messages one read of the outbox sent.
				sent, reads := published(p.nodes)
				b.ReportMetric(float64(sent-sent0)/float64(b.N), "msgs/lifecycle")
				b.ReportMetric(float64(sent-sent0)/float64(max(reads-reads0, 1)), "msgs/read")
			}
			commits, writes := written(p.dbs)
			// The busiest writer: every write of its relay waits for it.
			// Its time splits into its commits (the fsync on a disk) and
			// the rest, its writes' statements.
			var busiest, committing time.Duration
			for i, st := range writerStats(p.dbs) {
				if d := st.Busy - busy0[i].Busy; d > busiest {
					busiest, committing = d, st.Committing-busy0[i].Committing
				}
			}
			b.ReportMetric(busiest.Seconds()/el.Seconds(), "writer-busy")
			b.ReportMetric(float64(busiest.Microseconds())/float64(b.N), "writer-µs/lifecycle")
			b.ReportMetric(float64(committing.Microseconds())/float64(b.N), "writer-commit-µs/lifecycle")
			b.ReportMetric(float64(commits-commits0)/float64(b.N), "commits/lifecycle")
			b.ReportMetric(float64(writes-writes0)/float64(b.N), "writes/lifecycle")
			b.ReportMetric(float64(b.N)/el.Seconds(), "lifecycles/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/lifecycle")
			b.ReportMetric(cpu.Seconds()/el.Seconds(), "cores")
			reportSteps(b, slices.Concat(took...))
			b.ReportMetric(0, "ns/op")
		})
	}
}

// steps are how long each step of one lifecycle took: the post, the claim
// (across relays: the post's trip to the owner's relay and its apply), the
// report, and the wait for the completed update on the sender's relay
// (across relays: the report's trip back).
type steps struct{ post, claim, report, update time.Duration }

// lap returns the time since t, and now.
func (steps) lap(t time.Time) (time.Duration, time.Time) {
	now := time.Now()
	return now.Sub(t), now
}

// reportSteps reports the median of each step in ms.
func reportSteps(b *testing.B, all []steps) {
	if len(all) == 0 {
		return
	}
	for _, s := range []struct {
		unit string
		of   func(steps) time.Duration
	}{
		{"post-p50-ms", func(s steps) time.Duration { return s.post }},
		{"claim-p50-ms", func(s steps) time.Duration { return s.claim }},
		{"report-p50-ms", func(s steps) time.Duration { return s.report }},
		{"update-p50-ms", func(s steps) time.Duration { return s.update }},
	} {
		d := make([]time.Duration, len(all))
		for k, st := range all {
			d[k] = s.of(st)
		}
		b.ReportMetric(percentile(d, 0.5), s.unit)
	}
}

// BenchmarkBacklog posts b.N tasks at once from 8 senders on one relay to
// agents on the other, nobody claiming, and times until the other relay
// has applied them all: the publisher with its window full, as after a
// burst or when NATS comes back.
func BenchmarkBacklog(b *testing.B) {
	const senders = 8
	p, from, to := benchPairs(b, "mesh", senders)
	ctx := context.Background()
	owner := p.nodes[1]
	applied0 := owner.applied.Load()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, err := p.sender.PostTask(ctx, relay.PostTaskInput{SenderSlug: from[i], RecipientSlug: to[i], Title: "backlog", Instructions: "x"}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for owner.applied.Load()-applied0 < int64(b.N) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks applied", owner.applied.Load()-applied0, b.N)
		}
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "tasks/s")
	b.ReportMetric(0, "ns/op")
}
