package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// latencySQL reads each task posted in [?1, ?2) (tasks_created) and
// claimed since: its recipient and, as Unix milliseconds, when it was
// posted, claimed and, if it is completed, completed (a completed task's
// updated_at, as Stats reads it). Each timestamp is parsed once.
var latencySQL = `SELECT recipient_slug, ` + msSQL("created_at") + `, ` + msSQL("claimed_at") + `,
	CASE WHEN status = 'completed' THEN ` + msSQL("updated_at") + ` END
FROM tasks INDEXED BY tasks_created WHERE created_at >= ?1 AND created_at < ?2 AND claimed_at IS NOT NULL`

// Latencies implements relay.InsightService. SQL reads the window's tasks
// and Go ranks their durations: a percentile needs each agent's durations
// in order, and SQLite orders them only through a window function, a sort
// and a pass through a table of its own for each of the two orders (the
// time to claim, the time to finish), which took two thirds of the query's
// time; sorting in Go and picking the rank costs a tenth of that
// (docs/performance.md, Chart aggregates).
func (db *DB) Latencies(ctx context.Context, since, until time.Time) ([]relay.AgentLatency, error) {
	if !until.After(since) || until.Sub(since) > relay.MaxInsightSpan {
		return nil, relay.Errorf(relay.EInvalidRequest, "latencies: the window must be positive and at most %s long.", relay.MaxInsightSpan)
	}
	bySlug := map[string]*latencySamples{}
	err := db.read(ctx, "latencies", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, latencySQL, relay.FormatTime(since), relay.FormatTime(until))
		if err != nil {
			return fmt.Errorf("latencies: %w", err)
		}
		defer rows.Close()
		var (
			slug            string
			posted, claimed int64
			done            sql.NullInt64
		)
		for rows.Next() {
			if err := rows.Scan(&slug, &posted, &claimed, &done); err != nil {
				return fmt.Errorf("latencies: %w", err)
			}
			s := bySlug[slug]
			if s == nil {
				s = &latencySamples{}
				bySlug[slug] = s
			}
			// Across two relays' clocks a duration can come out negative:
			// it is floored at zero.
			s.claim = append(s.claim, max(0, claimed-posted))
			if done.Valid {
				s.finish = append(s.finish, max(0, done.Int64-claimed))
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("latencies: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]relay.AgentLatency, 0, len(bySlug))
	for slug, s := range bySlug {
		out = append(out, relay.AgentLatency{Slug: slug, Claim: durationsOf(s.claim), Finish: durationsOf(s.finish)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

// latencySamples are one agent's durations in milliseconds.
type latencySamples struct{ claim, finish []int64 }

// durationsOf gives the count, median and 90th percentile of ms, which it
// sorts; zero for none.
func durationsOf(ms []int64) relay.Durations {
	if len(ms) == 0 {
		return relay.Durations{}
	}
	slices.Sort(ms)
	return relay.Durations{Count: len(ms), MedianMs: nearestRank(ms, 50), P90Ms: nearestRank(ms, 90)}
}

// nearestRank is the p-th percentile of sorted (not empty) by nearest
// rank, as relay.Durations defines it: the smallest value with at least
// p % of the set at or below it, the ⌈n·p/100⌉-th.
func nearestRank(sorted []int64, p int) int64 {
	return sorted[(len(sorted)*p+99)/100-1]
}
