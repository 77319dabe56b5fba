package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestHotQueryPlans holds the statements every claim, post and
// read_updates runs to the plans that keep them flat as the database grows:
// each reads one agent's few rows through a small index (migration 0011),
// and the claim takes its order from tasks_queue rather than sorting the
// recipient's queue. A statement changed so that SQLite would walk a whole
// table, or an index dropped or changed, fails here.
func TestHotQueryPlans(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "relay.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cases := []struct {
		name  string
		query string
		args  int
		want  string
	}{
		{"claim: next queued task", nextQueuedSQL + nextQueuedOrder, 1,
			"SEARCH t USING INDEX tasks_queue (recipient_slug=?)"},
		{"claim: next queued task from some senders", nextQueuedSQL + ` AND t.sender_slug IN (?, ?)` + nextQueuedOrder, 3,
			"SEARCH t USING INDEX tasks_queue (recipient_slug=?)"},
		{"claim: next queued task a worker leaves to live sessions", nextQueuedSQL + leaveLiveSQL + nextQueuedOrder, 2,
			"SEARCH ls USING PRIMARY KEY (agent_slug=? AND session_id=?)"},
		{"claim: next queued task a live session leaves to the others", nextQueuedSQL + leaveOtherLiveSQL + nextQueuedOrder, 3,
			"SEARCH ls USING PRIMARY KEY (agent_slug=? AND session_id=?)"},
		{"claim: the recipient's expired leases", expiredLeasesSQL + expiredLeasesOfSQL, 2,
			"SEARCH tasks USING INDEX tasks_leases (recipient_slug=? AND lease_expires_at<?)"},
		{"post: the sender's open tasks", countOpenSQL, 1,
			"SEARCH tasks USING INDEX tasks_sender_open (sender_slug=?)"},
		{"read_updates: events after the cursor", unreadEventsSQL + limitSQL(25), 2,
			"SEARCH events USING INTEGER PRIMARY KEY (rowid>?)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := make([]any, tc.args)
			for i := range args {
				args[i] = "x"
			}
			rows, err := db.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+tc.query, args...)
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
			got := strings.Join(plan, "; ")
			if !strings.Contains(got, tc.want) {
				t.Errorf("plan %q; want it to %s", got, tc.want)
			}
			for _, bad := range []string{"SCAN t ", "SCAN tasks", "SCAN events", "TEMP B-TREE"} {
				if strings.Contains(got+" ", bad) {
					t.Errorf("plan %q has %q", got, bad)
				}
			}
		})
	}
}
