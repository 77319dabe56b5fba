package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// PendingOutbox leaves out the rows in flight, those to a relay not trusted
// now and those of a task waiting for a retry, and still fills its limit
// from the rows after them, in every combination of the three.
func TestPendingOutboxLeavesOut(t *testing.T) {
	db := openWith(t, "")
	ctx := context.Background()
	// seq 1..8: relay r1 for odd rows, r2 for even; task tN for row N, but
	// rows 7 and 8 belong to t1 and t2 as well.
	for i := 1; i <= 8; i++ {
		rel, task := fmt.Sprint("r", 2-i%2), fmt.Sprint("t", i)
		if i > 6 {
			task = fmt.Sprint("t", i-6)
		}
		if _, err := db.w.ExecContext(ctx, `INSERT INTO mesh_outbox (msg_id, to_relay, task_id, event_recipient, event_type, event_summary, event_created_at, created_at)
			VALUES (?, ?, ?, 'someone', 'task_progress', 'x', 'now', 'now')`, fmt.Sprint("m", i), rel, task); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		q    relay.OutboxQuery
		want []int64
	}{
		{"all", relay.OutboxQuery{Limit: 100}, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"limit", relay.OutboxQuery{Limit: 3}, []int64{1, 2, 3}},
		{"busy", relay.OutboxQuery{Limit: 100, Busy: []int64{1, 4}}, []int64{2, 3, 5, 6, 7, 8}},
		{"busy first rows, limit filled after them", relay.OutboxQuery{Limit: 2, Busy: []int64{1, 2, 3}}, []int64{4, 5}},
		{"busy rows gone or unknown", relay.OutboxQuery{Limit: 2, Busy: []int64{99, 100, 2}}, []int64{1, 3}},
		{"skip", relay.OutboxQuery{Limit: 100, Skip: []string{"r2"}}, []int64{1, 3, 5, 7}},
		{"skip all", relay.OutboxQuery{Limit: 100, Skip: []string{"r1", "r2"}}, nil},
		{"waiting", relay.OutboxQuery{Limit: 100, Waiting: []string{"t1", "t4"}}, []int64{2, 3, 5, 6, 8}},
		{"skip and waiting", relay.OutboxQuery{Limit: 100, Skip: []string{"r1"}, Waiting: []string{"t2"}}, []int64{4, 6}},
		{"all three, limit", relay.OutboxQuery{Limit: 2, Skip: []string{"r2"}, Waiting: []string{"t3"}, Busy: []int64{1}}, []int64{5, 7}},
		{"busy rows of a skipped relay", relay.OutboxQuery{Limit: 1, Skip: []string{"r2"}, Busy: []int64{2, 4, 1}}, []int64{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := db.Mesh().PendingOutbox(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, it := range items {
				got = append(got, it.Seq)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
		})
	}
}
