package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// startRelay starts a real relay in a temp dir on a random loopback port
// and returns bench options pointing at it.
func startRelay(tb testing.TB) bench.Options {
	tb.Helper()
	var cfg config.Config
	fs := cfg.NewFlagSet("test", func(string) (string, bool) { return "", false }, true, io.Discard)
	if err := fs.Parse([]string{"--host", "127.0.0.1", "--port", "1", "--data-dir", tb.TempDir()}); err != nil {
		tb.Fatal(err)
	}
	if err := cfg.Finish(); err != nil {
		tb.Fatal(err)
	}
	cfg.Port = 0
	t0 := time.Now()
	r := apptest.Start(tb, cfg, app.StartOptions{Version: "test", Logger: slog.New(slog.DiscardHandler)})
	url := "http://" + r.Addr().String()
	c := bench.NewClient(url, 2)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.WaitHealthy(ctx); err != nil {
		tb.Fatal(err)
	}
	token, err := cfg.AdminToken(false)
	if err != nil {
		tb.Fatal(err)
	}
	return bench.Options{URL: url, AdminToken: token, Service: r.Service(), InProcess: true, Startup: time.Since(t0)}
}

// TestRunEndToEnd runs every phase with tiny numbers against a real relay
// and checks that the counts add up. Timings are not asserted.
func TestRunEndToEnd(t *testing.T) {
	o := startRelay(t)
	var progress bytes.Buffer
	o.Agents, o.Tasks, o.QueueSizes, o.WakeSamples, o.ClaimSamples = 2, 20, []int{10, 100}, 5, 5
	o.CommitWindow = 50 * time.Millisecond
	o.FloorDir = t.TempDir()
	o.Progress = &progress
	rep, err := bench.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}

	l := rep.Lifecycle
	if l.Completed != 20 || l.Tasks != 20 || l.Errors != 0 || l.EventsRead != 60 {
		t.Errorf("lifecycle: completed %d/%d, %d errors, %d events read (want 20/20, 0, 60)", l.Completed, l.Tasks, l.Errors, l.EventsRead)
	}
	calls := map[string]int{}
	total := 0
	for _, ts := range l.Tools {
		if ts.Errors != 0 {
			t.Errorf("%s: %d errors", ts.Op, ts.Errors)
		}
		calls[ts.Op] = ts.Latency.Count
		total += ts.Latency.Count
	}
	if calls[bench.OpPost] != 20 || calls[bench.OpReportProgress] != 20 || calls[bench.OpReportComplete] != 20 {
		t.Errorf("calls = %v, want 20 posts, 20 progress and 20 completed reports", calls)
	}
	// Every task was claimed once: immediately, or by a waiting claim after an idle one.
	if got := calls[bench.OpClaim] - l.IdleClaims + l.ClaimedAfterWait; got != 20 || calls[bench.OpClaimWait] != l.IdleClaims {
		t.Errorf("claims: %d immediate (%d idle), %d waiting (%d got a task); %d tasks claimed, want 20", calls[bench.OpClaim], l.IdleClaims, calls[bench.OpClaimWait], l.ClaimedAfterWait, got)
	}
	if calls[bench.OpReadUpdates] < 1 || total != l.Ops {
		t.Errorf("read_updates %d, total %d vs ops %d", calls[bench.OpReadUpdates], total, l.Ops)
	}

	if rep.Wake == nil || rep.Wake.Samples != 5 || rep.Wake.Latency.Count != 5 || rep.Wake.Post.Count != 5 {
		t.Errorf("wake = %+v, want 5 samples", rep.Wake)
	}
	if f := rep.Floor; f == nil || f.Dir != o.FloorDir || f.Disk.Count != 5 || f.Service != nil || f.IdleMs != bench.Ms(bench.DefaultWakeSettle) {
		t.Errorf("floor = %+v, want 5 disk samples in %s after the wake-up's idle gap, no service", rep.Floor, o.FloorDir)
	}
	if len(rep.Queues) != 2 {
		t.Fatalf("queues = %+v, want 2", rep.Queues)
	}
	for i, size := range []int{10, 100} {
		q := rep.Queues[i]
		if q.Size != size || q.QueuedAtStart != size || q.Claim.Count != 5 || q.Release.Count != 5 || !strings.Contains(q.SeedVia, "relay.Service") {
			t.Errorf("queue %d = %+v", size, q)
		}
	}
	if rep.Commits == nil || rep.Commits.Service.Count == 0 || rep.Commits.MCP.Count == 0 {
		t.Errorf("commits = %+v", rep.Commits)
	}
	if rep.Memory == nil || rep.Memory.IdleRSS <= 0 || rep.Memory.PeakRSS < rep.Memory.LoadRSS {
		t.Errorf("memory = %+v", rep.Memory)
	}
	if rep.StartupMs <= 0 {
		t.Errorf("startup = %v", rep.StartupMs)
	}

	// The queue tasks are still queued: every claim was released.
	for i, size := range []int{10, 100} {
		tasks, err := o.Service.ListTasks(context.Background(), relay.TaskFilter{Agent: rep.Setup.Prefix + "-queue-" + strconv.Itoa(size), Statuses: []relay.TaskStatus{relay.StatusQueued}, Limit: relay.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(size, relay.MaxListLimit); len(tasks) != want {
			t.Errorf("queue %d (#%d): %d tasks queued after the run, want %d", size, i, len(tasks), want)
		}
	}

	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Lifecycle: 2 agents, 20 tasks", "Wake-up", "post_task", "floor: 16 KiB write + fsync", "read_updates", "QUEUED", "idle RSS"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not decode: %v", err)
	}
	if back.Lifecycle.Completed != 20 || back.Wake.Latency.Count != 5 || back.Floor == nil || back.Floor.Disk.Count != 5 {
		t.Errorf("JSON round trip lost counts: %+v", back.Lifecycle)
	}
}
