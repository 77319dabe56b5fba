// Package metrics serves the relay's Prometheus metrics (GET /metrics):
// tasks by state, tool calls by name with latency histograms, waiting
// claims, worker runs and, in a mesh, the outbox, the consumer lag, the
// publish and apply counts and the link state. It is the only importer of
// github.com/prometheus/client_golang.
//
// Everything is registered on a private registry, never on the library's
// global default one. Counts that live elsewhere (tasks, the mesh) are read
// when Prometheus scrapes, so an idle relay does no work for its metrics.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Namespace prefixes every metric of the relay.
const Namespace = "crosschat"

// scrapeTimeout bounds the reads one scrape makes (the task counts, the
// consumer info).
const scrapeTimeout = 5 * time.Second

// toolBuckets are the latency buckets of tool calls, in seconds: from a
// millisecond to the longest long-poll (claim_next_task waits under 25 s).
var toolBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 30}

// claimTool is the tool whose calls in progress are the waiting claims.
const claimTool = "claim_next_task"

// LinkStates are the states of a relay's connection to NATS.
var LinkStates = []string{"connected", "connecting", "reconnecting", "closed"}

// MeshSnapshot is the mesh as one relay sees it, read at scrape time.
type MeshSnapshot struct {
	// Link is one of LinkStates.
	Link string
	// Ready is false until the stream, directory and consumer are set up.
	Ready bool
	// Outbox is the number of changes waiting to be published.
	Outbox int
	// Lag is the number of messages for this relay not yet delivered to it;
	// AckPending those delivered and not yet acknowledged.
	Lag, AckPending uint64
	// Published, Applied, Duplicates and Failures count since the relay started.
	Published, Applied, Duplicates, Failures int64
	// Refused counts envelopes refused since the relay started, by reason.
	Refused map[string]int64
	// Held is the number of envelopes held (relays not trusted, newer versions).
	Held int
	// Relays are the relays of the directory.
	Relays []RelaySnapshot
}

// RelaySnapshot is one relay of the mesh directory.
type RelaySnapshot struct {
	Name   string
	Online bool
	Self   bool
}

// Sources are where scrapes read the counts kept elsewhere. Each may be nil.
type Sources struct {
	// Stats are the task counts (relay.Service.Stats).
	Stats func(ctx context.Context) (relay.Stats, error)
	// Workers are the workers' current statuses.
	Workers func() []relay.WorkerStatus
	// Mesh is the mesh status; ok is false when the relay is not in a mesh.
	Mesh func(ctx context.Context) (snap MeshSnapshot, ok bool, err error)
}

// Metrics holds the relay's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	toolSeconds  *prometheus.HistogramVec
	toolErrors   *prometheus.CounterVec
	toolInFlight *prometheus.GaugeVec
	runsStarted  prometheus.Counter
	runsFinished *prometheus.CounterVec

	claims atomic.Int64 // claim_next_task calls in progress
	tools  sync.Map     // tool name → *toolSeries, made at its first call

	mu      sync.Mutex
	workers map[string]workerSeen
}

// toolSeries are a tool's in-flight gauge and duration histogram, looked up
// once rather than by label on every call (hashing the label and finding
// the series was 1 % of the relay's CPU under load). Its error counter is
// looked up when a call fails, so that it is not shown before one has.
type toolSeries struct {
	inFlight prometheus.Gauge
	seconds  prometheus.Observer
}

// series returns tool's series.
func (m *Metrics) series(tool string) *toolSeries {
	if s, ok := m.tools.Load(tool); ok {
		return s.(*toolSeries)
	}
	s, _ := m.tools.LoadOrStore(tool, &toolSeries{
		inFlight: m.toolInFlight.WithLabelValues(tool),
		seconds:  m.toolSeconds.WithLabelValues(tool),
	})
	return s.(*toolSeries)
}

// workerSeen is what Metrics last saw of a worker, to count runs once.
type workerSeen struct {
	current string // the running task's id, "" when none
	last    string // the last finished run's task id and finish time
}

// New builds the metrics on a private registry, with the Go runtime and
// process collectors (process_resident_memory_bytes and friends).
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), workers: map[string]workerSeen{}}
	m.toolSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "tool_call_duration_seconds",
		Help:    "MCP tool calls by tool name: how long each took (a waiting claim counts its wait).",
		Buckets: toolBuckets,
	}, []string{"tool"})
	m.toolErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "tool_call_errors_total",
		Help: "MCP tool calls that answered an error, by tool name.",
	}, []string{"tool"})
	m.toolInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "tool_calls_in_flight",
		Help: "MCP tool calls in progress, by tool name.",
	}, []string{"tool"})
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "claims_waiting",
		Help: "claim_next_task calls in progress over MCP: agents waiting for a task.",
	}, func() float64 { return float64(m.claims.Load()) })
	m.runsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "worker_runs_started_total",
		Help: "Worker runs started since the relay started.",
	})
	m.runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "worker_runs_finished_total",
		Help: "Worker runs finished since the relay started, by outcome (completed, blocked, cancelled).",
	}, []string{"outcome"})
	m.reg.MustRegister(m.toolSeconds, m.toolErrors, m.toolInFlight, waiting, m.runsStarted, m.runsFinished,
		&scraped{src: src},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             2 * scrapeTimeout,
	})
	return m
}

// Handler serves the metrics in the Prometheus text format. It checks no
// access: internal/web guards the route.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Registry is the private registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ToolStarted counts a tool call in progress.
func (m *Metrics) ToolStarted(tool string) {
	if tool == claimTool {
		m.claims.Add(1)
	}
	m.series(tool).inFlight.Inc()
}

// ToolFinished records a finished tool call: its duration and whether it
// answered an error.
func (m *Metrics) ToolFinished(tool string, elapsed time.Duration, failed bool) {
	if tool == claimTool {
		m.claims.Add(-1)
	}
	s := m.series(tool)
	s.inFlight.Dec()
	s.seconds.Observe(elapsed.Seconds())
	if failed {
		m.toolErrors.WithLabelValues(tool).Inc()
	}
}

// WorkerStatus counts the runs a worker's status shows starting and
// finishing. The first status seen of a worker is its baseline: a run it
// finished before is not counted again.
func (m *Metrics) WorkerStatus(s relay.WorkerStatus) {
	now := workerSeen{}
	if s.CurrentTask != nil {
		now.current = s.CurrentTask.ID
	}
	if s.LastRun != nil {
		now.last = s.LastRun.TaskID + "@" + s.LastRun.FinishedAt
	}
	m.mu.Lock()
	before, known := m.workers[s.AgentSlug]
	m.workers[s.AgentSlug] = now
	m.mu.Unlock()
	if now.current != "" && now.current != before.current {
		m.runsStarted.Inc()
	}
	if known && now.last != "" && now.last != before.last {
		m.runsFinished.WithLabelValues(s.LastRun.Outcome).Inc()
	}
}
