package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A mesh run (Options.Peer): two relays in one mesh. Each sender of the
// lifecycle is an agent of the first relay and posts to an agent of the
// peer, which claims, reports and completes there; the sender reads its
// updates on the first relay. The wake-up's waiting claim is on the peer
// too, so a wake-up is a post on one relay answering a claim on the other.
// Both relays' resource use is read when each has a Probe. What one relay
// does alone (long queues, parked claims) is measured without a peer.

// Peer is a second relay in one mesh with the first (Options.Peer): the
// relays must already trust each other.
type Peer struct {
	// URL is the peer relay's base URL, AdminToken its admin token.
	URL        string
	AdminToken string
	// Probe, when set, reads the peer relay's process (as Options.Probe).
	Probe Probe
}

// meshWait bounds how long the relays take to list each other's bench
// agents (the directory refreshes its entries as agents change).
const meshWait = 2 * time.Minute

// awaitMesh waits until each relay lists the other's bench agents under
// their own slugs, so that each task names its agents as they are and
// the names the relays pin for them are the plain ones.
func (r *runner) awaitMesh(ctx context.Context) error {
	here := append(append([]agent{}, r.agent...), r.wakeS)
	there := append(append([]agent{}, r.worker...), r.wakeR)
	ctx, cancel := context.WithTimeout(ctx, meshWait)
	defer cancel()
	r.pr.linef("bench: mesh: waiting for each relay to list the other's %d agents", len(here)+len(there))
	for _, side := range []struct {
		who    agent   // lists, on its relay
		listed []agent // the other relay's
	}{{r.agent[0], there}, {r.worker[0], here}} {
		for {
			missing, err := r.unlisted(ctx, side.who, side.listed)
			if err == nil && missing == 0 {
				break
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = fmt.Errorf("%d of its agents not listed", missing)
				}
				return fmt.Errorf("bench: mesh: the relays do not see each other (are they in one mesh, trusting each other?): %w", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// unlisted counts the agents of want (the other relay's) that who's relay
// does not list under their own slugs.
func (r *runner) unlisted(ctx context.Context, who agent, want []agent) (int, error) {
	var out []relay.Agent
	if err := who.c.Tool(ctx, who.token, "list_agents", map[string]any{"includeOffline": true}, &out); err != nil {
		return len(want), err
	}
	seen := map[string]bool{}
	for _, a := range out {
		seen[a.Slug] = true
	}
	missing := 0
	for _, a := range want {
		if !seen[a.slug] {
			missing++
		}
	}
	return missing, nil
}

// MeshMedians are the medians of mesh runs' figures over rounds (each with
// every round's value).
type MeshMedians struct {
	Rounds           int     `json:"rounds"`
	LifecyclesPerSec *Figure `json:"lifecyclesPerSec,omitempty"`
	WakeP50Ms        *Figure `json:"wakeP50Ms,omitempty"`
	WakeP99Ms        *Figure `json:"wakeP99Ms,omitempty"`
	// CPU per lifecycle of the first relay and of the peer.
	FirstCPUPerLifecycleMs *Figure `json:"firstCpuPerLifecycleMs,omitempty"`
	PeerCPUPerLifecycleMs  *Figure `json:"peerCpuPerLifecycleMs,omitempty"`
}

// SummarizeMesh gives the medians of mesh runs.
func SummarizeMesh(reps []*Report) MeshMedians {
	var rate, p50, p99, first, peer []float64
	for _, r := range reps {
		rate = append(rate, r.Lifecycle.LifecyclesPerSec)
		if w := r.Wake; w != nil && w.Latency.Count > 0 {
			p50 = append(p50, Ms(w.Latency.P50))
			p99 = append(p99, Ms(w.Latency.P99))
		}
		if r.Relay != nil {
			first = append(first, r.Relay.CPUPerLifecycleMs)
		}
		if r.Peer != nil {
			peer = append(peer, r.Peer.CPUPerLifecycleMs)
		}
	}
	return MeshMedians{Rounds: len(reps), LifecyclesPerSec: newFigure(rate), WakeP50Ms: newFigure(p50), WakeP99Ms: newFigure(p99),
		FirstCPUPerLifecycleMs: newFigure(first), PeerCPUPerLifecycleMs: newFigure(peer)}
}

// WriteText prints the medians, one figure per line, each round's value
// after it in brackets.
func (m MeshMedians) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "Medians of %d rounds across the mesh (each round's value in brackets):\n", m.Rounds)
	for _, l := range []struct {
		name string
		f    *Figure
		unit string
		prec int
	}{
		{"lifecycles/s", m.LifecyclesPerSec, "", 0},
		{"wake-up p50", m.WakeP50Ms, " ms", 2},
		{"wake-up p99", m.WakeP99Ms, " ms", 2},
		{"first relay CPU per lifecycle", m.FirstCPUPerLifecycleMs, " ms", 3},
		{"peer relay CPU per lifecycle", m.PeerCPUPerLifecycleMs, " ms", 3},
	} {
		if l.f == nil {
			continue
		}
		vals := make([]string, len(l.f.Rounds))
		for i, v := range l.f.Rounds {
			vals[i] = fmt.Sprintf("%.*f", l.prec, v)
		}
		fmt.Fprintf(ew, "  %s: %.*f%s (%s)\n", l.name, l.prec, l.f.Median, l.unit, strings.Join(vals, ", "))
	}
	return ew.err
}
