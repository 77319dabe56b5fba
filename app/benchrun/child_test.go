package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
)

func TestProcessCPUGrows(t *testing.T) {
	before, err := processCPU()
	if err != nil {
		t.Skipf("no /proc/self/stat: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for x := 0; ; x++ {
		after, err := processCPU()
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process CPU stayed at %v while spinning", after)
		}
		_ = x * x
	}
}

// TestBenchChildWaitersPhase: a bench child relay answers samples and
// settled samples, and the bench's waiters phase runs against it to the
// end: claims parked, sampled, woken, given up, and sampled again once the
// relay has let them go. (The figures are this test process's, not a
// relay's alone, so only their presence is checked.)
func TestBenchChildWaitersPhase(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- ServeChild(Child{Dir: t.TempDir(), Version: "test"}, stdinR, stdoutW, &stderr) }()
	out := bufio.NewReader(stdoutR)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ready" {
		t.Fatalf("first line %q, want ready URL TOKEN", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	var reads atomic.Int64 // the bench's own CPU reads 1 s, then 3 s
	selfCPU := func() (time.Duration, error) { return time.Duration(2*reads.Add(1)-1) * time.Second, nil }
	rep, err := bench.Run(ctx, bench.Options{
		URL: f[1], AdminToken: f[2], Probe: &childProbe{in: stdinW, out: out}, SelfCPU: selfCPU,
		Agents: 2, Tasks: 4, QueueSizes: []int{}, WakeSamples: -1, CommitWindow: -1, Waiters: 12,
		Progress: &progress,
	})
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, progress.String())
	}
	w := rep.Waiters
	if w == nil || w.Waiters != 12 || w.RSSParked <= 0 || w.RSSParkedSettled <= 0 || w.RSSGoneSettled <= 0 || w.Wake.Count != 12 {
		t.Fatalf("waiters phase = %+v", w)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "settled (after a garbage collection") {
		t.Errorf("the report lacks the settled figures:\n%s", text.String())
	}
	if l := rep.Lifecycle; l.Ops == 0 || l.BenchCPUPerCallMs != 2000/float64(l.Ops) || !strings.Contains(text.String(), "the bench itself") {
		t.Errorf("bench CPU per call = %v for %d calls (want 2 s over them), report:\n%s", l.BenchCPUPerCallMs, l.Ops, text.String())
	}
	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bench child: %v\n%s", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("the bench child did not stop at the end of its input")
	}
}

// TestBenchChildProfile: a child relay given --cpuprofile records a CPU
// profile between the parent's start and stop requests, and its
// allocations at both (gzipped pprof files); one given none refuses to
// start recording.
func TestBenchChildProfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile bool
	}{{"asked", true}, {"not asked", false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.profile {
				path = filepath.Join(t.TempDir(), "relay.pprof")
			}
			stdinR, stdinW := io.Pipe()
			stdoutR, stdoutW := io.Pipe()
			var stderr bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- ServeChild(Child{Dir: t.TempDir(), Version: "test", Profile: path}, stdinR, stdoutW, &stderr)
			}()
			out := bufio.NewReader(stdoutR)
			if line, err := out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready ") {
				t.Fatalf("first line %q, %v", line, err)
			}
			p := childProfiler{&childProbe{in: stdinW, out: out}}
			err := p.StartCPUProfile(context.Background())
			if !tc.profile {
				if err == nil || !strings.Contains(err.Error(), "no --cpuprofile") {
					t.Fatalf("start without a file: %v, want a refusal", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if err := p.StopCPUProfile(context.Background()); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{path, path + ".allocs-start", path + ".allocs"} {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
						t.Fatalf("%s is not a gzipped pprof file: % x", f, b[:min(len(b), 8)])
					}
				}
			}
			stdinW.Close()
			if err := <-done; err != nil {
				t.Fatalf("bench child: %v\n%s", err, stderr.String())
			}
		})
	}
}
