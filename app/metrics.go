package app

import (
	"context"

	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/metrics"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// newMetrics builds the relay's /metrics: task counts from svc, workers
// from ws (once they run), the mesh from node (nil outside a mesh).
func newMetrics(svc relay.Service, node *mesh.Node, ws *Workers) *metrics.Metrics {
	src := metrics.Sources{
		Stats: svc.Stats,
		Workers: func() []relay.WorkerStatus {
			if m, err := ws.manager(); err == nil {
				return m.Statuses()
			}
			return nil
		},
	}
	if node != nil {
		src.Mesh = func(ctx context.Context) (metrics.MeshSnapshot, bool, error) {
			st, err := node.Status(ctx)
			if err != nil {
				return metrics.MeshSnapshot{}, true, err
			}
			return meshSnapshot(st), true, nil
		}
	}
	return metrics.New(src)
}

// meshSnapshot converts the mesh status for the metrics.
func meshSnapshot(st mesh.Status) metrics.MeshSnapshot {
	s := metrics.MeshSnapshot{Link: st.Link, Ready: st.Ready, Outbox: st.Outbox, Lag: st.Lag,
		AckPending: uint64(max(st.AckPending, 0)), Published: st.Published, Applied: st.Applied,
		Duplicates: st.Duplicates, Failures: st.Failures, Refused: st.Refused, Held: len(st.Held)}
	for _, r := range st.Relays {
		s.Relays = append(s.Relays, metrics.RelaySnapshot{Name: r.Name, Online: r.Online, Self: r.Self})
	}
	return s
}
