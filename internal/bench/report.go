package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// CommitsPerLifecycle is how many SQLite write transactions one lifecycle
// costs when its claim finds the task queued: post_task, claim_next_task,
// report_task progress, report_task completed and read_updates each run
// one BEGIN IMMEDIATE transaction (claims and read_updates write presence
// and the read cursor). A claim that finds the queue empty costs one more.
const CommitsPerLifecycle = 5

// ReferenceCommitRate is a single-row commit rate at synchronous=FULL, per
// second, measured once on the 2-core development machine: the figure a
// report compares the relay's commits with.
const ReferenceCommitRate = 5700

// fmtDur prints a latency in milliseconds with sensible precision.
func fmtDur(d time.Duration) string {
	ms := Ms(d)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.0f ms", ms)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteText writes the report as readable tables.
func (rep *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	p := func(format string, args ...any) { fmt.Fprintf(ew, format, args...) }
	where := "relay at " + rep.Target.URL
	if rep.Target.InProcess {
		where = "in-process relay at " + rep.Target.URL + " (fresh temp data dir)"
	}
	if rep.Target.PeerURL != "" {
		where = "a mesh of the relays at " + rep.Target.URL + " and " + rep.Target.PeerURL +
			" (the first's agents post to the second's, which claim, report and complete there)"
	}
	m := rep.Machine
	p("Crosschat Relay bench: %s\n", where)
	p("%s %s/%s, %d CPUs (GOMAXPROCS %d); MCP as raw JSON-RPC over HTTP, one cca_ token per agent\n\n", m.GoVersion, m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS)

	p("Start-up and memory\n")
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	if rep.StartupMs > 0 {
		fmt.Fprintf(tw, "  start-up (Start → /health 200)\t%.1f ms\n", rep.StartupMs)
	} else if rep.Target.PeerURL != "" {
		fmt.Fprintf(tw, "  start-up\tnot measured (two relays joining one mesh); memory is the first relay's\n")
	} else {
		fmt.Fprintf(tw, "  start-up\tnot measured (relay not started by the bench)\n")
	}
	if mem := rep.Memory; mem != nil {
		fmt.Fprintf(tw, "  idle RSS (after start, before load)\t%s%s\n", mib(mem.IdleRSS), anonPart(mem.IdleAnon))
		if rep.Relay != nil {
			fmt.Fprintf(tw, "  RSS after load (relay process alone)\t%s%s\n", mib(mem.LoadRSS), anonPart(mem.LoadAnon))
		} else {
			fmt.Fprintf(tw, "  RSS after load / peak (bench client included)\t%s / %s\n", mib(mem.LoadRSS), mib(mem.PeakRSS))
		}
	} else {
		fmt.Fprintf(tw, "  memory\tnot measured (relay in another process)\n")
	}
	tw.Flush()

	if c := rep.Commits; c != nil {
		p("\nCommit rate: single-row write transactions (heartbeat) back to back, %.1f s each\n", c.WindowMs/1000)
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  \tCOMMITS/S\tP50\tP99\t\n")
		if c.ServicePerSec > 0 {
			fmt.Fprintf(tw, "  relay.Service.Heartbeat (in process)\t%.0f\t%s\t%s\t\n", c.ServicePerSec, fmtDur(c.Service.P50), fmtDur(c.Service.P99))
		}
		fmt.Fprintf(tw, "  heartbeat tool (MCP over HTTP)\t%.0f\t%s\t%s\t\n", c.MCPPerSec, fmtDur(c.MCP.P50), fmtDur(c.MCP.P99))
		tw.Flush()
	}

	l := rep.Lifecycle
	p("\nLifecycle: %d agents, %d tasks, up to %d open per sender (post → claim → progress → completed → read_updates)\n", l.Agents, l.Tasks, l.Window)
	p("  %d/%d completed, %d events read, %d ops, %d errors in %.2f s\n", l.Completed, l.Tasks, l.EventsRead, l.Ops, l.Errors, l.DurationMs/1000)
	p("  %.0f lifecycles/s, %.0f ops/s\n", l.LifecyclesPerSec, l.OpsPerSec)
	if rep.Target.PeerURL == "" {
		p("  every op is one write (%d per lifecycle, plus %d claims that found the queue empty; the writer commits them in groups): %.0f writes/s", CommitsPerLifecycle, l.IdleClaims, l.OpsPerSec)
		if c := rep.Commits; c != nil && c.ServicePerSec > 0 {
			p(", %.0f%% of the back-to-back in-process rate above", 100*l.OpsPerSec/c.ServicePerSec)
		}
		p("\n")
	}
	tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  TOOL\tCALLS\tERRORS\tP50\tP90\tP99\tMAX\t\n")
	for _, t := range l.Tools {
		s := t.Latency
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", t.Op, s.Count, t.Errors, fmtDur(s.P50), fmtDur(s.P90), fmtDur(s.P99), fmtDur(s.Max))
	}
	tw.Flush()
	p("  (claim_next_task is the immediate claim, waitMs 0; \"(waitMs)\" claims waited up to %d ms for work and include that wait)\n", longPollMs)
	if u := rep.Relay; u != nil && rep.Target.PeerURL == "" {
		p("  relay process: %.3f ms CPU per tool call (%.2f cores busy); %d writes in %d commits: %.2f fsyncs per lifecycle, %.1f writes per commit\n",
			u.CPUPerCallMs, u.CPUCores, u.Writes, u.Batches, u.FsyncsPerLifecycle, float64(u.Writes)/float64(max(u.Batches, 1)))
		p("  the store's single writer was busy %.0f%% of the phase, %.0f%% in COMMIT (fsync included); every write waits for it\n",
			100*u.WriterBusy, 100*u.WriterCommitting)
	}
	for _, ru := range []struct {
		name string
		u    *RelayUsage
	}{{"first relay", rep.Relay}, {"peer relay", rep.Peer}} {
		if u := ru.u; u != nil && rep.Target.PeerURL != "" {
			p("  %s: %.3f ms CPU per lifecycle (%.2f cores busy); %d writes in %d commits: %.2f fsyncs per lifecycle\n",
				ru.name, u.CPUPerLifecycleMs, u.CPUCores, u.Writes, u.Batches, u.FsyncsPerLifecycle)
		}
	}
	if l.BenchCPUPerCallMs > 0 {
		p("  the bench itself (the load generator, on the same cores): %.3f ms CPU per tool call", l.BenchCPUPerCallMs)
		if u := rep.Relay; u != nil && rep.Target.PeerURL == "" {
			// The bench's work per call is the same in every run: the
			// quotient is steadier than the relay's figure alone while the
			// shared machine's speed changes.
			p("; the relay's is %.2f times that", u.CPUPerCallMs/l.BenchCPUPerCallMs)
		}
		p("\n")
	}

	if wk := rep.Wake; wk != nil {
		p("\nWake-up: claim_next_task waiting (waitMs 20000), then post_task to it; from sending the post to the claim's answer\n")
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  \tSAMPLES\tP50\tP90\tP99\tMAX\t\n")
		row := func(name string, l Summary) {
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t\n", name, l.Count, fmtDur(l.P50), fmtDur(l.P90), fmtDur(l.P99), fmtDur(l.Max))
		}
		row("wake-up", wk.Latency)
		row("post_task itself", wk.Post)
		if f := rep.Floor; f != nil {
			row(fmt.Sprintf("floor: %d KiB write + fsync, no relay", f.WriteBytes>>10), f.Disk)
			if f.Service != nil {
				row("floor: request to a Go service that does it", *f.Service)
			}
		}
		tw.Flush()
		if f := rep.Floor; f != nil {
			p("  (floors: the data folder's own write and fsync, and a do-nothing Go HTTP service in its own process doing the same per request,\n")
			p("   each after the same %.0f ms idle; a wake-up is such a request, which commits once)\n", f.IdleMs)
		}
	}

	if w := rep.Waiters; w != nil {
		p("\nWaiters: %d agents each holding a waiting claim_next_task at once\n", w.Waiters)
		p("  relay RSS %s before, %s with all parked: %.1f KiB per parked claim\n", mib(w.RSSBefore), mib(w.RSSParked), float64(w.PerWaiterBytes)/1024)
		if w.StackPerWaiter > 0 || w.HeapPerWaiter > 0 {
			p("  of which Go stacks %.1f KiB and Go heap %.1f KiB per claim\n", float64(w.StackPerWaiter)/1024, float64(w.HeapPerWaiter)/1024)
		}
		if w.RSSParkedSettled > 0 {
			p("  settled (after a garbage collection that returns free memory to the OS): %s with all parked, %s once they had gone:\n", mib(w.RSSParkedSettled), mib(w.RSSGoneSettled))
			p("  %.1f KiB per parked claim, of which live Go heap and stacks %.1f KiB\n", float64(w.SettledPerWaiterBytes)/1024, float64(w.LivePerWaiterBytes)/1024)
		}
		p("  wake-up with the others parked (%d samples): p50 %s, p90 %s, p99 %s, max %s\n", w.Wake.Count, fmtDur(w.Wake.P50), fmtDur(w.Wake.P90), fmtDur(w.Wake.P99), fmtDur(w.Wake.Max))
	}

	if len(rep.Queues) > 0 {
		p("\nClaim latency by queue depth: claim_next_task (waitMs 0), each claimed task released again\n")
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  QUEUED\tCLAIMS\tP50\tP90\tP99\tMAX\tRELEASE P50\tSEEDED\t\n")
		for _, q := range rep.Queues {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f s (%.0f/s)\t\n", q.Size, q.Claim.Count, fmtDur(q.Claim.P50), fmtDur(q.Claim.P90), fmtDur(q.Claim.P99), fmtDur(q.Claim.Max), fmtDur(q.Release.P50), q.SeedMs/1000, q.SeedPerSec)
		}
		tw.Flush()
		p("  seeded via %s\n", rep.Queues[0].SeedVia)
	}
	p("\nTotal %.1f s\n", rep.ElapsedMs/1000)
	return ew.err
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	if err != nil {
		e.err = fmt.Errorf("write report: %w", err)
	}
	return n, err
}

// anonPart is ", anonymous N MiB" when the anonymous part of an RSS figure
// is known.
func anonPart(anon int64) string {
	if anon <= 0 {
		return ""
	}
	return ", anonymous " + mib(anon)
}
