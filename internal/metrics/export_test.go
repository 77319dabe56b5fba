package metrics

import "github.com/prometheus/client_golang/prometheus"

// RunsStarted is the started-runs counter, for tests.
func (m *Metrics) RunsStarted() prometheus.Counter { return m.runsStarted }

// RunsFinished is the finished-runs counter of one outcome, for tests.
func (m *Metrics) RunsFinished(outcome string) prometheus.Counter {
	return m.runsFinished.WithLabelValues(outcome)
}
