package store_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// none is a time that never came: a task not claimed, or not completed.
const none = math.MinInt64

// timedTask is a task as Latencies reads it, its times in milliseconds
// after the window opens (negative before it): claimed none is never
// claimed, done none not completed (it then stays in status, queued or
// claimed unless said).
type timedTask struct {
	slug                  string
	posted, claimed, done int64
	status                relay.TaskStatus
}

// insertTimedTasks writes rows straight into the store's file, so that
// their times (a claim before its posting, as across two relays' clocks,
// ties to the millisecond) are exactly what the case says.
func insertTimedTasks(t *testing.T, e *env, start time.Time, rows []timedTask) {
	t.Helper()
	raw := rawDB(t, e.path)
	at := func(ms int64) string { return relay.FormatTime(start.Add(time.Duration(ms) * time.Millisecond)) }
	for i, r := range rows {
		status, claimedAt, updated := r.status, any(nil), at(r.posted)
		switch {
		case r.claimed == none:
			status = cmp.Or(status, relay.StatusQueued)
		case r.done != none:
			status, claimedAt, updated = relay.StatusCompleted, at(r.claimed), at(r.done)
		default:
			status, claimedAt, updated = cmp.Or(status, relay.StatusClaimed), at(r.claimed), at(r.claimed)
		}
		if _, err := raw.Exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, status, created_at, updated_at, claimed_at)
			VALUES (?, 'operator', ?, ?, 'Do it', ?, ?, ?, ?)`,
			relay.NewID(), r.slug, fmt.Sprintf("Task %d", i), string(status), at(r.posted), updated, claimedAt); err != nil {
			t.Fatal(err)
		}
	}
}

// wantLatencies is what Latencies should say of rows posted in the
// window [0, span): per agent with a claim, the nearest-rank median and p90
// of the claim and finish times, each floored at zero, computed here in Go
// apart from the store.
func wantLatencies(rows []timedTask, span int64) []relay.AgentLatency {
	claims, finishes := map[string][]int64{}, map[string][]int64{}
	for _, r := range rows {
		if r.posted < 0 || r.posted >= span || r.claimed == none {
			continue
		}
		claims[r.slug] = append(claims[r.slug], max(0, r.claimed-r.posted))
		if r.done != none {
			finishes[r.slug] = append(finishes[r.slug], max(0, r.done-r.claimed))
		}
	}
	var want []relay.AgentLatency
	for slug, c := range claims {
		want = append(want, relay.AgentLatency{Slug: slug, Claim: durations(c), Finish: durations(finishes[slug])})
	}
	slices.SortFunc(want, func(a, b relay.AgentLatency) int { return cmp.Compare(a.Slug, b.Slug) })
	return want
}

// TestLatencyPercentiles: the median and p90 by nearest rank hold at the
// edges: ties, an agent with one task, tasks claimed and not completed
// (no finish), tasks never claimed (nothing), times across two clocks
// (floored at zero), and the window's own bounds (its start in, its end
// out).
func TestLatencyPercentiles(t *testing.T) {
	const span = int64(7 * 24 * time.Hour / time.Millisecond)
	cases := []struct {
		name string
		rows []timedTask
		want []relay.AgentLatency // checked besides wantLatencies, where the case is about a value
	}{
		{"one task", []timedTask{{"ana", 0, 1000, 5000, ""}},
			[]relay.AgentLatency{{Slug: "ana", Claim: relay.Durations{Count: 1, MedianMs: 1000, P90Ms: 1000}, Finish: relay.Durations{Count: 1, MedianMs: 4000, P90Ms: 4000}}}},
		{"one task claimed, not done", []timedTask{{"ana", 10, 70, none, ""}},
			[]relay.AgentLatency{{Slug: "ana", Claim: relay.Durations{Count: 1, MedianMs: 60, P90Ms: 60}}}},
		{"ties", []timedTask{
			{"ben", 0, 5, 15, ""}, {"ben", 1, 6, 16, ""}, {"ben", 2, 7, 17, ""}, {"ben", 3, 8, 18, ""}, {"ben", 4, 13, 19, ""},
		}, []relay.AgentLatency{{Slug: "ben", Claim: relay.Durations{Count: 5, MedianMs: 5, P90Ms: 9}, Finish: relay.Durations{Count: 5, MedianMs: 10, P90Ms: 10}}}},
		{"all equal", []timedTask{{"cat", 0, 100, 300, ""}, {"cat", 100, 200, 400, ""}, {"cat", 200, 300, 500, ""}},
			[]relay.AgentLatency{{Slug: "cat", Claim: relay.Durations{Count: 3, MedianMs: 100, P90Ms: 100}, Finish: relay.Durations{Count: 3, MedianMs: 200, P90Ms: 200}}}},
		{"ten, median is the 5th and p90 the 9th", func() []timedTask {
			var rows []timedTask
			for i := int64(1); i <= 10; i++ {
				rows = append(rows, timedTask{"dan", i * 1000, i*1000 + i, i*1000 + 3*i, ""})
			}
			return rows
		}(), []relay.AgentLatency{{Slug: "dan", Claim: relay.Durations{Count: 10, MedianMs: 5, P90Ms: 9}, Finish: relay.Durations{Count: 10, MedianMs: 10, P90Ms: 18}}}},
		{"never claimed and blocked", []timedTask{
			{"eve", 0, none, none, ""}, {"eve", 5, none, none, relay.StatusCancelled}, {"eve", 10, 40, none, relay.StatusBlocked},
			{"fay", 0, none, none, ""},
		}, []relay.AgentLatency{{Slug: "eve", Claim: relay.Durations{Count: 1, MedianMs: 30, P90Ms: 30}}}},
		{"across two clocks", []timedTask{{"gus", 1000, 400, 300, ""}, {"gus", 2000, 2500, 2600, ""}},
			[]relay.AgentLatency{{Slug: "gus", Claim: relay.Durations{Count: 2, MedianMs: 0, P90Ms: 500}, Finish: relay.Durations{Count: 2, MedianMs: 0, P90Ms: 100}}}},
		{"the window's bounds", []timedTask{
			{"hal", -1, 0, 10, ""}, {"hal", 0, 7, 9, ""}, {"hal", span - 1, span + 3, span + 4, ""}, {"hal", span, span + 100, span + 200, ""},
		}, []relay.AgentLatency{{Slug: "hal", Claim: relay.Durations{Count: 2, MedianMs: 4, P90Ms: 7}, Finish: relay.Durations{Count: 2, MedianMs: 1, P90Ms: 2}}}},
		{"agents apart", []timedTask{
			{"ivy", 0, 1, 2, ""}, {"jon", 0, 50, none, ""}, {"ivy", 1, 4, 10, ""}, {"jon", 1, 3, 4, ""},
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			start := e.clock.Now().Add(-8 * 24 * time.Hour).Truncate(time.Second)
			insertTimedTasks(t, e, start, tc.rows)
			got, err := e.db.Latencies(e.ctx, start, start.Add(time.Duration(span)*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if want := wantLatencies(tc.rows, span); !slices.Equal(got, want) {
				t.Errorf("latencies:\n got %+v\nwant %+v", got, want)
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("latencies:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestLatencyPercentilesAtRandom: on a few hundred tasks of random times,
// with many ties and some across two clocks, Latencies agrees with the
// nearest rank computed here.
func TestLatencyPercentilesAtRandom(t *testing.T) {
	const span = int64(24 * time.Hour / time.Millisecond)
	r := rand.New(rand.NewPCG(46, 2))
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			e := newEnv(t, store.Options{})
			start := e.clock.Now().Add(-2 * 24 * time.Hour).Truncate(time.Second)
			var rows []timedTask
			for range 300 {
				row := timedTask{slug: fmt.Sprintf("agent-%d", r.IntN(7)), posted: r.Int64N(span+span/10) - span/20, claimed: none, done: none}
				if r.IntN(8) > 0 {
					row.claimed = row.posted + r.Int64N(40) - 3 // many ties, a few before the posting
					if r.IntN(3) > 0 {
						row.done = row.claimed + r.Int64N(25) - 2
					}
				}
				rows = append(rows, row)
			}
			insertTimedTasks(t, e, start, rows)
			got, err := e.db.Latencies(e.ctx, start, start.Add(time.Duration(span)*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if want := wantLatencies(rows, span); !slices.Equal(got, want) {
				t.Errorf("latencies:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
