package bench_test

import (
	"context"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Benchmarks measure speed against a real relay in b.TempDir() (so on the
// disk that holds the temp dir; set TMPDIR=/dev/shm to take fsync out).
// Profile them with -cpuprofile. Tests never assert timings.

// BenchmarkLifecycle runs b.N full lifecycles with 8 agents.
func BenchmarkLifecycle(b *testing.B) {
	o := startRelay(b)
	o.Agents, o.Tasks = 8, b.N
	o.QueueSizes, o.WakeSamples, o.CommitWindow = []int{}, -1, -1
	b.ResetTimer()
	rep, err := bench.Run(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rep.Lifecycle.LifecyclesPerSec, "lifecycles/s")
	b.ReportMetric(rep.Lifecycle.OpsPerSec, "ops/s")
}

// BenchmarkWakeUp times b.N wake-ups of a waiting claim (each sample also
// waits the settle delay, so ns/op is not the latency: see p50-ms, p99-ms).
func BenchmarkWakeUp(b *testing.B) {
	o := startRelay(b)
	o.Agents, o.Tasks, o.WakeSamples = 1, 1, b.N
	o.QueueSizes, o.CommitWindow = []int{}, -1
	b.ResetTimer()
	rep, err := bench.Run(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(bench.Ms(rep.Wake.Latency.P50), "p50-ms")
	b.ReportMetric(bench.Ms(rep.Wake.Latency.P99), "p99-ms")
}

// benchTool runs one tool b.N times with a fresh agent's token.
func benchTool(b *testing.B, tool string, args map[string]any) {
	o := startRelay(b)
	c := bench.NewClient(o.URL, 4)
	defer c.Close()
	ctx := context.Background()
	var out struct {
		Token string `json:"token"`
	}
	in := relay.CreateAgentInput{Slug: "bench-tool", DisplayName: "Bench", ModelSlug: "bench", Capabilities: []string{"text-input"}}
	if err := c.Bridge(ctx, o.AdminToken, "Agents", "Create", &out, in); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := c.Tool(ctx, out.Token, tool, args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeartbeatMCP is one single-row commit per call over MCP.
func BenchmarkHeartbeatMCP(b *testing.B) { benchTool(b, "heartbeat", nil) }

// BenchmarkWhoamiMCP is a call that does not write: HTTP + auth + MCP only.
func BenchmarkWhoamiMCP(b *testing.B) { benchTool(b, "whoami", nil) }

// BenchmarkHeartbeatService is one single-row commit per call, in process.
func BenchmarkHeartbeatService(b *testing.B) {
	o := startRelay(b)
	ctx := context.Background()
	if _, _, err := o.Service.CreateAgent(ctx, relay.CreateAgentInput{Slug: "bench-svc", DisplayName: "Bench", ModelSlug: "bench", Capabilities: []string{"text-input"}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := o.Service.Heartbeat(ctx, "bench-svc"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostTaskService posts one task per op in process (how long
// queues are seeded): one transaction with an insert into an indexed table.
func BenchmarkPostTaskService(b *testing.B) {
	o := startRelay(b)
	ctx := context.Background()
	for _, slug := range []string{"bench-from", "bench-to"} {
		if _, _, err := o.Service.CreateAgent(ctx, relay.CreateAgentInput{Slug: slug, DisplayName: "Bench", ModelSlug: "bench", Capabilities: []string{"text-input"}}); err != nil {
			b.Fatal(err)
		}
	}
	in := relay.PostTaskInput{SenderSlug: "bench-from", RecipientSlug: "bench-to", Title: "queued", Instructions: "Queue-depth filler."}
	b.ResetTimer()
	for b.Loop() {
		if _, err := o.Service.PostTask(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}
