package mcp

import (
	"testing"
	"time"
)

// TestTidierDecides drives the tidier's decisions with a made-up clock: a
// burst arms it once, it waits for the parks to go quiet (or its longest),
// a crowd that churns at one level never arms it, one that falls and rises
// again does, and tidies are at least tidyEvery apart.
func TestTidierDecides(t *testing.T) {
	const (
		step    = 8
		quiet   = 100 * time.Millisecond
		maxWait = time.Second
		every   = 30 * time.Second
	)
	ms := func(n int) time.Time { return time.Unix(1000, 0).Add(time.Duration(n) * time.Millisecond) }
	type op struct {
		at   int    // ms on the made-up clock
		do   string // "park n", "leave n", "due", "done n"
		n    int64
		want time.Duration // park: the wait when it arms, -1 when it must not, 0 unchecked; due: the wait
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"a burst arms once and waits for quiet", []op{
			{at: 0, do: "park", n: 1, want: -1},
			{at: 1, do: "park", n: 7, want: -1},
			{at: 2, do: "park", n: 8, want: quiet},
			{at: 3, do: "park", n: 9, want: -1}, // already armed
			{at: 50, do: "park", n: 40, want: -1},
			{at: 102, do: "due", want: 48 * time.Millisecond}, // quiet since 50
			{at: 150, do: "due", want: 0},
		}},
		{"parks that never go quiet wait maxWait at most", []op{
			{at: 0, do: "park", n: 8, want: quiet},
			{at: 90, do: "park", n: 9},
			{at: 100, do: "due", want: 90 * time.Millisecond},
			{at: 950, do: "park", n: 10},
			{at: 960, do: "due", want: 40 * time.Millisecond}, // maxWait ends before the quiet would
			{at: 1000, do: "due", want: 0},
		}},
		{"a crowd churning at one level does not arm it again", []op{
			{at: 0, do: "park", n: 20, want: quiet},
			{at: 200, do: "due", want: 0},
			{at: 210, do: "done", n: 20},
			{at: 31000, do: "leave", n: 19},
			{at: 31001, do: "park", n: 20, want: -1},
			{at: 31002, do: "leave", n: 13},
			{at: 31003, do: "park", n: 20, want: -1}, // 7 above the low mark
			{at: 31004, do: "park", n: 21, want: quiet},
		}},
		{"a crowd that left and comes back arms it again", []op{
			{at: 0, do: "park", n: 10, want: quiet},
			{at: 100, do: "done", n: 10},
			{at: 40000, do: "leave", n: 0},
			{at: 40001, do: "park", n: 7, want: -1},
			{at: 40002, do: "park", n: 8, want: quiet},
			{at: 40102, do: "due", want: 0},
		}},
		{"tidies are tidyEvery apart", []op{
			{at: 0, do: "park", n: 8, want: quiet},
			{at: 100, do: "done", n: 0},
			{at: 5100, do: "park", n: 8, want: every - 5*time.Second},
			{at: 29000, do: "due", want: 1100 * time.Millisecond},
			{at: 30100, do: "due", want: 0}, // quiet long since
		}},
		{"after waiting for tidyEvery, parks still going on get maxWait more", []op{
			{at: 0, do: "park", n: 8, want: quiet},
			{at: 100, do: "done", n: 0},
			{at: 1000, do: "park", n: 8, want: every - 900*time.Millisecond},
			{at: 30050, do: "park", n: 9},
			{at: 30100, do: "due", want: 50 * time.Millisecond},
			{at: 31090, do: "park", n: 10},
			{at: 31095, do: "due", want: 5 * time.Millisecond}, // 30100 + maxWait
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt := &tidier{step: step, quiet: quiet, maxWait: maxWait, every: every}
			for i, o := range tc.ops {
				now := ms(o.at)
				switch o.do {
				case "park":
					wait, arm := tt.note(o.n, now)
					if o.want == 0 {
						continue // only noted
					}
					if got := map[bool]time.Duration{false: -1, true: wait}[arm]; got != o.want {
						t.Fatalf("op %d (park %d at %d ms): wait %v (armed %v), want %v", i, o.n, o.at, wait, arm, o.want)
					}
				case "leave":
					tt.left(o.n)
				case "due":
					if got := tt.due(now); got != o.want {
						t.Fatalf("op %d (due at %d ms): %v, want %v", i, o.at, got, o.want)
					}
				case "done":
					tt.done(o.n, now)
				default:
					t.Fatalf("op %d: unknown %q", i, o.do)
				}
			}
		})
	}
}
