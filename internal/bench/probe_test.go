package bench

import (
	"testing"
	"time"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name          string
		before, after Sample
		l             LifecycleResult
		want          RelayUsage
	}{
		{
			name:   "group commit",
			before: Sample{CPU: time.Second, RSS: 10, Batches: 5, Writes: 5, WriterBusy: time.Second, Committing: 500 * time.Millisecond},
			after:  Sample{CPU: 3 * time.Second, RSS: 30, Batches: 505, Writes: 5005, WriterBusy: 4 * time.Second, Committing: 1500 * time.Millisecond},
			l:      LifecycleResult{Ops: 5000, Completed: 1000, DurationMs: 4000},
			want:   RelayUsage{CPUPerCallMs: 0.4, CPUPerLifecycleMs: 2, CPUCores: 0.5, Batches: 500, Writes: 5000, FsyncsPerLifecycle: 0.5, WriterBusy: 0.75, WriterCommitting: 0.25, RSSAfterLoad: 30},
		},
		{
			name:  "nothing ran",
			after: Sample{RSS: 7},
			want:  RelayUsage{RSSAfterLoad: 7},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := usage(tc.before, tc.after, tc.l); got != tc.want {
				t.Fatalf("usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}
