package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1}, 3},
		{[]float64{9, 1, 4}, 4},
		{[]float64{4, 1, 3, 10}, 3.5},
		{[]float64{2, 2, 7, 1, 2}, 2},
	}
	for _, c := range cases {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its input: %v, was %v", c.in, in)
		}
	}
}

// report is a data-folder or tmpfs report with the figures Rounds reads.
func report(rate, cpu float64, wake time.Duration, waiters *WaitersResult) *Report {
	return &Report{
		Lifecycle: LifecycleResult{LifecyclesPerSec: rate},
		Relay:     &RelayUsage{CPUPerCallMs: cpu, FsyncsPerLifecycle: 0.5, RSSAfterLoad: 35 << 20},
		Wake:      &WakeResult{Latency: Summary{Count: 10, P50: wake / 2, P99: wake}},
		Waiters:   waiters,
	}
}

func TestSummarizeRounds(t *testing.T) {
	parked := func(rss, per int64) *WaitersResult {
		return &WaitersResult{Waiters: 1000, RSSParked: rss << 20, PerWaiterBytes: per << 10, RSSParkedSettled: (rss - 10) << 20, SettledPerWaiterBytes: (per - 10) << 10}
	}
	disk := []*Report{
		report(600, 0.30, 3*time.Millisecond, parked(60, 25)),
		report(800, 0.28, 2*time.Millisecond, parked(58, 23)),
		report(700, 0.32, 4*time.Millisecond, nil), // a round without the crowd
	}
	tmpfs := []*Report{report(1000, 0.25, 0, nil), report(800, 0.20, 0, nil), report(700, 0.27, 0, nil)}
	for i, b := range []float64{0.125, 0.1, 0.09} {
		tmpfs[i].Lifecycle.BenchCPUPerCallMs = b // the load generator's own
	}
	r := SummarizeRounds(disk, tmpfs)

	check := func(name string, f *Figure, median float64, rounds ...float64) {
		t.Helper()
		if f == nil {
			t.Fatalf("%s: nil", name)
		}
		if !near(f.Median, median) || len(f.Rounds) != len(rounds) {
			t.Errorf("%s = %+v, want median %v of %v", name, *f, median, rounds)
			return
		}
		for i := range rounds {
			if !near(f.Rounds[i], rounds[i]) {
				t.Errorf("%s round %d = %v, want %v", name, i+1, f.Rounds[i], rounds[i])
			}
		}
	}
	if r.Rounds != 3 {
		t.Errorf("rounds = %d, want 3", r.Rounds)
	}
	check("disk rate", r.DiskLifecyclesPerSec, 700, 600, 800, 700)
	check("tmpfs rate", r.TmpfsLifecyclesPerSec, 800, 1000, 800, 700)
	// The ratio is each round's own, not the ratio of the medians (700/800).
	check("ratio", r.DiskToTmpfs, 1, 0.6, 1, 1)
	check("tmpfs CPU", r.TmpfsCPUPerCallMs, 0.25, 0.25, 0.20, 0.27)
	check("disk CPU", r.DiskCPUPerCallMs, 0.30, 0.30, 0.28, 0.32)
	// Each round's own quotient, not the quotient of the medians (0.25/0.1).
	check("tmpfs CPU over the bench's", r.TmpfsCPUToBench, 2, 2, 2, 3)
	check("wake p99", r.WakeP99Ms, 3, 3, 2, 4)
	check("wake p50", r.WakeP50Ms, 1.5, 1.5, 1, 2)
	check("RSS after load", r.RSSAfterLoadMiB, 35, 35, 35, 35)
	check("parked", r.ParkedRSSMiB, 59, 60, 58)
	check("per claim", r.ParkedPerClaimKiB, 24, 25, 23)
	check("settled", r.ParkedSettledRSSMiB, 49, 50, 48)
	check("settled per claim", r.ParkedSettledPerClaimKiB, 14, 15, 13)

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Medians of 3 rounds",
		"lifecycles/s, data folder: 700 (600, 800, 700)",
		"data folder / tmpfs: 100 % (60, 100, 100)",
		"relay CPU per tool call, tmpfs: 0.250 ms (0.250, 0.200, 0.270)",
		"the same over the bench's own CPU per call: 2.00x (2.00, 2.00, 3.00)",
		"wake-up p99, data folder: 3.00 ms (3.00, 2.00, 4.00)",
		"per parked claim, settled: 14.0 KiB (15.0, 13.0)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestSummarizeRoundsWithoutTmpfs: with no tmpfs runs there are no tmpfs
// figures and no ratio, and the text leaves them out.
func TestSummarizeRoundsWithoutTmpfs(t *testing.T) {
	r := SummarizeRounds([]*Report{report(500, 0.3, time.Millisecond, nil), report(700, 0.3, time.Millisecond, nil)}, nil)
	if r.TmpfsLifecyclesPerSec != nil || r.DiskToTmpfs != nil || r.TmpfsCPUPerCallMs != nil || r.TmpfsCPUToBench != nil || r.ParkedRSSMiB != nil {
		t.Errorf("figures from runs that did not happen: %+v", r)
	}
	if r.DiskLifecyclesPerSec == nil || r.DiskLifecyclesPerSec.Median != 600 {
		t.Errorf("disk rate = %+v, want median 600", r.DiskLifecyclesPerSec)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "tmpfs") {
		t.Errorf("the text names tmpfs:\n%s", text.String())
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
