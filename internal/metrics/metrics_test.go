package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/crosschat/crosschat-relay/internal/metrics"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

func status(slug, current, last, outcome string) relay.WorkerStatus {
	s := relay.WorkerStatus{WorkerConfig: relay.WorkerConfig{AgentSlug: slug}}
	if current != "" {
		s.CurrentTask = &relay.RunningTask{ID: current}
	}
	if last != "" {
		s.LastRun = &relay.LastRun{TaskID: last, FinishedAt: "2026-01-01T00:00:00Z", Outcome: outcome}
	}
	return s
}

// Ensure worker runs are counted once each from the statuses the worker
// manager publishes, and a run finished before the first status is not.
func TestWorkerRunsCountedOnce(t *testing.T) {
	for _, tc := range []struct {
		name               string
		statuses           []relay.WorkerStatus
		started, completed float64
		blocked            float64
	}{
		{"nothing", nil, 0, 0, 0},
		{"baseline only", []relay.WorkerStatus{status("a", "", "old", "completed")}, 0, 0, 0},
		{"one run", []relay.WorkerStatus{status("a", "", "", ""), status("a", "t1", "", ""), status("a", "", "t1", "completed")}, 1, 1, 0},
		{"repeated statuses", []relay.WorkerStatus{status("a", "", "", ""), status("a", "t1", "", ""), status("a", "t1", "", ""),
			status("a", "", "t1", "blocked"), status("a", "", "t1", "blocked")}, 1, 0, 1},
		{"two workers", []relay.WorkerStatus{status("a", "", "", ""), status("b", "", "", ""), status("a", "t1", "", ""),
			status("b", "t2", "", ""), status("a", "", "t1", "completed"), status("b", "", "t2", "completed")}, 2, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(metrics.Sources{})
			for _, s := range tc.statuses {
				m.WorkerStatus(s)
			}
			if got := value(t, m.RunsStarted()); got != tc.started {
				t.Errorf("started = %v, want %v", got, tc.started)
			}
			if got := value(t, m.RunsFinished("completed")); got != tc.completed {
				t.Errorf("completed = %v, want %v", got, tc.completed)
			}
			if got := value(t, m.RunsFinished("blocked")); got != tc.blocked {
				t.Errorf("blocked = %v, want %v", got, tc.blocked)
			}
		})
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
