package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

// The metrics read at scrape time.
var (
	descTasks   = desc("tasks", "Tasks on this relay by state.", "state")
	descAgents  = desc("agents", "Agents on this relay (humans included), and how many are online.", "presence")
	descWorkers = desc("workers", "Workers by state (idle, running, paused, limited, error, disabled).", "state")

	descMeshLink       = desc("mesh_link", "1 for the state of this relay's connection to NATS, 0 for the others.", "state")
	descMeshReady      = desc("mesh_ready", "1 once the stream, directory and consumer are set up.")
	descMeshOutbox     = desc("mesh_outbox_depth", "Changes waiting in the outbox to be published to other relays.")
	descMeshLag        = desc("mesh_consumer_lag", "Messages for this relay in the stream not yet delivered to it.")
	descMeshAckPending = desc("mesh_consumer_ack_pending", "Messages delivered to this relay and not yet acknowledged.")
	descMeshPublished  = desc("mesh_published_total", "Outbox changes published to the stream since the relay started (one message carries several to a relay that reads lists).")
	descMeshApplied    = desc("mesh_applied_total", "Messages from other relays applied since the relay started.")
	descMeshDuplicates = desc("mesh_duplicates_total", "Redelivered messages recognised as already applied.")
	descMeshFailures   = desc("mesh_failures_total", "Mesh operations that failed (and are retried).")
	descMeshRefused    = desc("mesh_refused_total", "Envelopes from other relays refused (wrong relay, not addressed here, outside the replay window, bad signature…) since the relay started.", "reason")
	descMeshHeld       = desc("mesh_held", "Changes kept but not applied (up to 200 counted): from relays not trusted (yet), or of a newer version.")
	descMeshRelays     = desc("mesh_relay_online", "1 for each relay of the directory that is online, 0 when offline.", "relay", "self")
)

// workerStates are reported even when no worker is in them, so a graph
// shows 0 rather than nothing.
var workerStates = []relay.WorkerState{relay.WorkerIdle, relay.WorkerRunning, relay.WorkerPaused,
	relay.WorkerLimited, relay.WorkerError, relay.WorkerDisabled}

// scraped reads the counts kept elsewhere when Prometheus scrapes.
type scraped struct{ src Sources }

// Describe sends every descriptor the collector may send.
func (c *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTasks, descAgents, descWorkers, descMeshLink, descMeshReady,
		descMeshOutbox, descMeshLag, descMeshAckPending, descMeshPublished, descMeshApplied,
		descMeshDuplicates, descMeshFailures, descMeshRefused, descMeshHeld, descMeshRelays} {
		ch <- d
	}
}

// Collect reads the task counts, the workers and the mesh. A source that
// fails is reported as an invalid metric, so the scrape shows the error
// (promhttp.ContinueOnError keeps the rest).
func (c *scraped) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if c.src.Stats != nil {
		c.collectStats(ctx, ch)
	}
	if c.src.Workers != nil {
		byState := map[relay.WorkerState]int{}
		for _, s := range c.src.Workers() {
			byState[s.State]++
		}
		for _, st := range workerStates {
			ch <- gauge(descWorkers, float64(byState[st]), string(st))
		}
	}
	if c.src.Mesh != nil {
		c.collectMesh(ctx, ch)
	}
}

func (c *scraped) collectStats(ctx context.Context, ch chan<- prometheus.Metric) {
	st, err := c.src.Stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descTasks, err)
		return
	}
	t := st.Tasks
	for _, s := range []struct {
		state string
		n     int
	}{{"queued", t.Queued}, {"claimed", t.Claimed}, {"blocked", t.Blocked}, {"completed", t.Completed}, {"cancelled", t.Cancelled}} {
		ch <- gauge(descTasks, float64(s.n), s.state)
	}
	ch <- gauge(descAgents, float64(st.Agents.Total), "total")
	ch <- gauge(descAgents, float64(st.Agents.Online), "online")
}

func (c *scraped) collectMesh(ctx context.Context, ch chan<- prometheus.Metric) {
	m, ok, err := c.src.Mesh(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descMeshOutbox, err)
		return
	}
	if !ok {
		return // not in a mesh: no mesh metrics at all
	}
	for _, s := range LinkStates {
		ch <- gauge(descMeshLink, boolValue(m.Link == s), s)
	}
	ch <- gauge(descMeshReady, boolValue(m.Ready))
	ch <- gauge(descMeshOutbox, float64(m.Outbox))
	ch <- gauge(descMeshLag, float64(m.Lag))
	ch <- gauge(descMeshAckPending, float64(m.AckPending))
	ch <- counter(descMeshPublished, float64(m.Published))
	ch <- counter(descMeshApplied, float64(m.Applied))
	ch <- counter(descMeshDuplicates, float64(m.Duplicates))
	ch <- counter(descMeshFailures, float64(m.Failures))
	for reason, n := range m.Refused {
		ch <- counter(descMeshRefused, float64(n), reason)
	}
	ch <- gauge(descMeshHeld, float64(m.Held))
	seen := map[string]bool{}
	for _, r := range m.Relays {
		if seen[r.Name] { // two relays of one name: report the first
			continue
		}
		seen[r.Name] = true
		self := "false"
		if r.Self {
			self = "true"
		}
		ch <- gauge(descMeshRelays, boolValue(r.Online), r.Name, self)
	}
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
