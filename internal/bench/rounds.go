package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// This machine, like most, is shared: one run of the bench can land on a
// busy minute and another on a quiet one. The performance targets are therefore
// medians of several runs, and `crosschat-relay bench --rounds N` measures
// N rounds, each the data folder and then tmpfs, so that a swing of the
// machine falls on both and on their ratio alike. Rounds holds the figures
// the targets name, each as its median and the value of every round.

// Figure is one figure over several rounds: its median and each round's
// value, in order.
type Figure struct {
	Median float64   `json:"median"`
	Rounds []float64 `json:"rounds"`
}

// newFigure is the figure of vals (nil when there are none).
func newFigure(vals []float64) *Figure {
	if len(vals) == 0 {
		return nil
	}
	return &Figure{Median: median(vals), Rounds: vals}
}

// median is the middle of vals, or the mean of the two middle values.
func median(vals []float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Rounds is the median of each of the performance targets' figures
// (docs/performance.md) over rounds of the bench. The data folder's figures
// come from every round's first run and tmpfs's from its second; a figure
// a round did not measure (no tmpfs run, no parked claims) is left out of
// that figure, and a figure no round measured is nil.
type Rounds struct {
	Rounds int `json:"rounds"`

	DiskLifecyclesPerSec  *Figure `json:"diskLifecyclesPerSec,omitempty"`
	TmpfsLifecyclesPerSec *Figure `json:"tmpfsLifecyclesPerSec,omitempty"`
	// DiskToTmpfs is each round's data-folder rate over its tmpfs rate.
	DiskToTmpfs *Figure `json:"diskToTmpfs,omitempty"`

	DiskCPUPerCallMs  *Figure `json:"diskCpuPerCallMs,omitempty"`
	TmpfsCPUPerCallMs *Figure `json:"tmpfsCpuPerCallMs,omitempty"`
	// TmpfsCPUToBench is each tmpfs run's relay CPU per call over the
	// bench's own in the same phase: the load generator does the same work
	// per call in every run, so the quotient moves less than the relay's
	// time with the shared machine's speed.
	TmpfsCPUToBench        *Figure `json:"tmpfsCpuToBench,omitempty"`
	DiskFsyncsPerLifecycle *Figure `json:"diskFsyncsPerLifecycle,omitempty"`

	// Wake-up on the data folder.
	WakeP50Ms *Figure `json:"wakeP50Ms,omitempty"`
	WakeP99Ms *Figure `json:"wakeP99Ms,omitempty"`

	// RSSAfterLoadMiB is the relay's RSS after the lifecycle phase on the
	// data folder.
	RSSAfterLoadMiB *Figure `json:"rssAfterLoadMiB,omitempty"`

	// The parked claims: the relay's RSS with all of them parked and per
	// claim, right after they arrived and settled.
	ParkedRSSMiB             *Figure `json:"parkedRssMiB,omitempty"`
	ParkedPerClaimKiB        *Figure `json:"parkedPerClaimKiB,omitempty"`
	ParkedSettledRSSMiB      *Figure `json:"parkedSettledRssMiB,omitempty"`
	ParkedSettledPerClaimKiB *Figure `json:"parkedSettledPerClaimKiB,omitempty"`
}

// SummarizeRounds gives the medians of rounds whose data-folder reports are
// disk and whose tmpfs reports are tmpfs (round i is disk[i] and, when
// there is one, tmpfs[i]; tmpfs may be shorter, or empty).
func SummarizeRounds(disk, tmpfs []*Report) Rounds {
	var (
		dRate, tRate, ratio, dCPU, tCPU, fsyncs []float64
		tToBench                                []float64
		p50, p99, rss                           []float64
		parked, perClaim, settled, settledPer   []float64
	)
	for i, d := range disk {
		dRate = append(dRate, d.Lifecycle.LifecyclesPerSec)
		if i < len(tmpfs) && tmpfs[i] != nil {
			t := tmpfs[i]
			tRate = append(tRate, t.Lifecycle.LifecyclesPerSec)
			if t.Lifecycle.LifecyclesPerSec > 0 {
				ratio = append(ratio, d.Lifecycle.LifecyclesPerSec/t.Lifecycle.LifecyclesPerSec)
			}
			if t.Relay != nil {
				tCPU = append(tCPU, t.Relay.CPUPerCallMs)
				if b := t.Lifecycle.BenchCPUPerCallMs; b > 0 {
					tToBench = append(tToBench, t.Relay.CPUPerCallMs/b)
				}
			}
		}
		if u := d.Relay; u != nil {
			dCPU = append(dCPU, u.CPUPerCallMs)
			fsyncs = append(fsyncs, u.FsyncsPerLifecycle)
			rss = append(rss, float64(u.RSSAfterLoad)/(1<<20))
		}
		if w := d.Wake; w != nil && w.Latency.Count > 0 {
			p50 = append(p50, Ms(w.Latency.P50))
			p99 = append(p99, Ms(w.Latency.P99))
		}
		if w := d.Waiters; w != nil && w.Waiters > 0 {
			parked = append(parked, float64(w.RSSParked)/(1<<20))
			perClaim = append(perClaim, float64(w.PerWaiterBytes)/1024)
			if w.RSSParkedSettled > 0 {
				settled = append(settled, float64(w.RSSParkedSettled)/(1<<20))
				settledPer = append(settledPer, float64(w.SettledPerWaiterBytes)/1024)
			}
		}
	}
	return Rounds{
		Rounds:                   len(disk),
		DiskLifecyclesPerSec:     newFigure(dRate),
		TmpfsLifecyclesPerSec:    newFigure(tRate),
		DiskToTmpfs:              newFigure(ratio),
		DiskCPUPerCallMs:         newFigure(dCPU),
		TmpfsCPUPerCallMs:        newFigure(tCPU),
		TmpfsCPUToBench:          newFigure(tToBench),
		DiskFsyncsPerLifecycle:   newFigure(fsyncs),
		WakeP50Ms:                newFigure(p50),
		WakeP99Ms:                newFigure(p99),
		RSSAfterLoadMiB:          newFigure(rss),
		ParkedRSSMiB:             newFigure(parked),
		ParkedPerClaimKiB:        newFigure(perClaim),
		ParkedSettledRSSMiB:      newFigure(settled),
		ParkedSettledPerClaimKiB: newFigure(settledPer),
	}
}

// WriteText prints the medians, one figure per line, each round's value
// after it in brackets.
func (r Rounds) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "Medians of %d rounds (each round's value in brackets):\n", r.Rounds)
	lines := []struct {
		name string
		f    *Figure
		unit string
		prec int
		pct  bool
	}{
		{"lifecycles/s, data folder", r.DiskLifecyclesPerSec, "", 0, false},
		{"lifecycles/s, tmpfs", r.TmpfsLifecyclesPerSec, "", 0, false},
		{"data folder / tmpfs", r.DiskToTmpfs, " %", 0, true},
		{"relay CPU per tool call, tmpfs", r.TmpfsCPUPerCallMs, " ms", 3, false},
		{"the same over the bench's own CPU per call", r.TmpfsCPUToBench, "x", 2, false},
		{"relay CPU per tool call, data folder", r.DiskCPUPerCallMs, " ms", 3, false},
		{"fsyncs per lifecycle, data folder", r.DiskFsyncsPerLifecycle, "", 2, false},
		{"wake-up p50, data folder", r.WakeP50Ms, " ms", 2, false},
		{"wake-up p99, data folder", r.WakeP99Ms, " ms", 2, false},
		{"RSS after load", r.RSSAfterLoadMiB, " MiB", 1, false},
		{"RSS with the claims parked", r.ParkedRSSMiB, " MiB", 1, false},
		{"per parked claim", r.ParkedPerClaimKiB, " KiB", 1, false},
		{"RSS with the claims parked, settled", r.ParkedSettledRSSMiB, " MiB", 1, false},
		{"per parked claim, settled", r.ParkedSettledPerClaimKiB, " KiB", 1, false},
	}
	for _, l := range lines {
		if l.f == nil {
			continue
		}
		scale := 1.0
		if l.pct {
			scale = 100
		}
		vals := make([]string, len(l.f.Rounds))
		for i, v := range l.f.Rounds {
			vals[i] = fmt.Sprintf("%.*f", l.prec, v*scale)
		}
		fmt.Fprintf(ew, "  %s: %.*f%s (%s)\n", l.name, l.prec, l.f.Median*scale, l.unit, strings.Join(vals, ", "))
	}
	return ew.err
}
