package store

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tableScan is a step of a plan that reads a whole table (by name or
// alias), row by row or along an index of all its rows; a walk of the
// partial indexes of the queued or the claimed tasks is not one.
var tableScan = regexp.MustCompile(`SCAN (tasks|reports|t|r)(;|$| USING (COVERING )?INDEX (tasks_(created|status_updated|recipient|sender|conversation|claim_session)|reports_|sqlite_autoindex))`)

// TestInsightPlans holds the chart aggregates (insights.go) to the indexes
// made for them (migration 0021) and to their bounded windows: each reads a
// range of one index by time, or one conversation's entries, and none walks
// the tasks or the reports table whole. An index dropped, or a query changed
// so that SQLite would scan, fails here.
func TestInsightPlans(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "relay.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cases := []struct {
		name  string
		query string
		args  []any
		want  []string
	}{
		{"throughput", throughputSQL, []any{24, 3600, "2026-03-14T12:00:00.000Z"}, []string{
			"SEARCH tasks USING COVERING INDEX tasks_created (created_at>? AND created_at<?)",
			"SEARCH reports USING COVERING INDEX reports_outcomes (created_at>? AND created_at<?)",
		}},
		{"latencies", latencySQL, []any{"a", "b"}, []string{
			"SEARCH tasks USING INDEX tasks_created (created_at>? AND created_at<?)",
		}},
		{"open work", openWorkSQL, nil, []string{
			// The whole of these partial indexes: the queued, the claimed tasks.
			"SCAN tasks USING COVERING INDEX tasks_queue",
			"SCAN tasks USING COVERING INDEX tasks_leases",
			"SEARCH tasks USING INDEX tasks_status_updated (status=?)",
		}},
		{"outcomes", outcomesSQL, []any{7, 86400, "2026-03-14T00:00:00.000Z"}, []string{
			"SEARCH tasks USING INDEX tasks_status_updated (status=? AND updated_at>? AND updated_at<?)",
		}},
		{"conversation", conversationSQL + limitSQL(501), []any{"x"}, []string{
			"SEARCH tasks USING INDEX sqlite_autoindex_tasks_1 (id=?)",
			"SEARCH tasks USING INDEX tasks_conversation (conversation_id=?)",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := queryPlan(t, db, tc.query, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("plan %q; want it to %s", got, w)
				}
			}
			if bad := tableScan.FindString(got); bad != "" {
				t.Errorf("plan %q has %q: a whole table is read", got, bad)
			}
		})
	}
}

// queryPlan is EXPLAIN QUERY PLAN of query, its steps joined by "; ".
func queryPlan(t *testing.T, db *DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
