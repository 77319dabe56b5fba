package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportTextComparesCPUWithTheBenchs: a run against a relay the bench
// started prints the relay's CPU per call over the load generator's; a
// mesh run (two relays, each with its own line) does not.
func TestReportTextComparesCPUWithTheBenchs(t *testing.T) {
	const want = "the relay's is 2.50 times that"
	for _, c := range []struct {
		name string
		peer string
		want bool
	}{
		{"one relay", "", true},
		{"mesh", "http://127.0.0.1:1", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &Report{
				Target:    Target{URL: "http://127.0.0.1:1", PeerURL: c.peer},
				Lifecycle: LifecycleResult{Agents: 2, Tasks: 10, Completed: 10, Ops: 50, BenchCPUPerCallMs: 0.08},
				Relay:     &RelayUsage{CPUPerCallMs: 0.2, Batches: 10, Writes: 50},
			}
			var text bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(text.String(), want); got != c.want {
				t.Errorf("text has %q: %v, want %v:\n%s", want, got, c.want, text.String())
			}
			if !strings.Contains(text.String(), "the bench itself (the load generator, on the same cores): 0.080 ms CPU per tool call") {
				t.Errorf("text lacks the bench's own CPU:\n%s", text.String())
			}
		})
	}
}
