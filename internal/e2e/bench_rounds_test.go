package e2e_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// TestBenchRounds runs the real `crosschat-relay bench --rounds 2` (child
// relays in two folders, a small load): four runs, data folder then tmpfs
// in each round, and medians that are those runs' own figures.
func TestBenchRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the relay binary")
	}
	disk, shm := t.TempDir(), t.TempDir()
	cmd := exec.Command(relayBinary(t), "bench", "--rounds", "2", "--agents", "2", "--tasks", "12",
		"--queue-sizes", "", "--wake-samples", "4", "--waiters", "8", "--data-dir", disk, "--tmpfs", shm, "--json")
	cmd.Env = childEnv()
	cmd.Dir = t.TempDir()
	var stderr testkit.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench --rounds 2: %v\n%s", err, stderr.String())
	}
	var sum struct {
		Runs []struct {
			Label  string        `json:"label"`
			Round  int           `json:"round"`
			Folder string        `json:"folder"`
			Report *bench.Report `json:"report"`
		} `json:"runs"`
		DiskToTmpfs float64       `json:"diskToTmpfs"`
		Medians     *bench.Rounds `json:"medians"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, out)
	}
	want := []struct {
		label  string
		round  int
		folder string
	}{{"data folder", 1, disk}, {"tmpfs", 1, shm}, {"data folder", 2, disk}, {"tmpfs", 2, shm}}
	if len(sum.Runs) != len(want) {
		t.Fatalf("%d runs, want %d:\n%s", len(sum.Runs), len(want), out)
	}
	var rates, ratios []float64
	for i, w := range want {
		r := sum.Runs[i]
		if r.Label != w.label || r.Round != w.round || r.Folder != w.folder || r.Report == nil || r.Report.Lifecycle.Completed != 12 {
			t.Fatalf("run %d = %s round %d in %s (%+v), want %s round %d in %s with 12 lifecycles", i, r.Label, r.Round, r.Folder, r.Report, w.label, w.round, w.folder)
		}
		if w.label == "data folder" {
			if r.Report.Waiters == nil || r.Report.Waiters.Waiters != 8 {
				t.Errorf("round %d: the parked claims were not measured on the data folder: %+v", w.round, r.Report.Waiters)
			}
			rates = append(rates, r.Report.Lifecycle.LifecyclesPerSec)
		} else {
			if r.Report.Waiters != nil {
				t.Errorf("round %d: parked claims measured on tmpfs", w.round)
			}
			ratios = append(ratios, sum.Runs[i-1].Report.Lifecycle.LifecyclesPerSec/r.Report.Lifecycle.LifecyclesPerSec)
		}
	}
	m := sum.Medians
	if m == nil || m.Rounds != 2 || m.DiskLifecyclesPerSec == nil || m.DiskToTmpfs == nil || m.ParkedSettledRSSMiB == nil || m.WakeP99Ms == nil || m.TmpfsCPUPerCallMs == nil {
		t.Fatalf("medians = %+v", m)
	}
	near := func(a, b float64) bool { return a-b < 1e-9*b && b-a < 1e-9*b }
	if got := m.DiskLifecyclesPerSec; len(got.Rounds) != 2 || !near(got.Rounds[0], rates[0]) || !near(got.Rounds[1], rates[1]) || !near(got.Median, (rates[0]+rates[1])/2) {
		t.Errorf("disk rate figure %+v, want the runs' %v and their mean", *got, rates)
	}
	if !near(m.DiskToTmpfs.Median, (ratios[0]+ratios[1])/2) || !near(sum.DiskToTmpfs, m.DiskToTmpfs.Median) {
		t.Errorf("ratio: figure %+v, summary %v; want the median of %v", *m.DiskToTmpfs, sum.DiskToTmpfs, ratios)
	}
	if !strings.Contains(stderr.String(), "round 2 of 2, tmpfs") {
		t.Errorf("progress does not name the rounds:\n%s", stderr.String())
	}

	// Without --json the text ends with the medians.
	text := cli(t, "bench", "--rounds", "2", "--agents", "2", "--tasks", "6",
		"--queue-sizes", "", "--wake-samples", "0", "--waiters", "0", "--data-dir", disk, "--tmpfs", shm)
	for _, s := range []string{"=== round 2, tmpfs: " + shm + " ===", "Medians of 2 rounds", "lifecycles/s, data folder:", "data folder / tmpfs:"} {
		if !strings.Contains(string(text), s) {
			t.Errorf("the text lacks %q:\n%s", s, text)
		}
	}
}
