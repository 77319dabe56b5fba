package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The aggregates behind the dashboard's charts. Each reads a bounded window
// of rows through an index keyed on a time (migration 0021: tasks_created,
// reports_outcomes; and tasks_status_updated) or on the conversation, and
// counts in SQL (the latencies' percentiles are picked in Go:
// insights_latency.go); TestInsightPlans holds them to those indexes and
// BenchmarkInsights times them on 100,000 tasks.

// msSQL is a stored timestamp (relay.TimeLayout) as Unix milliseconds, an
// integer, so durations are exact.
func msSQL(col string) string {
	return `CAST(round(unixepoch(` + col + `, 'subsec') * 1000) AS INTEGER)`
}

// bucketsCTE is the window's buckets b(i, lo, hi): ?1 buckets of ?2
// seconds from ?3, their bounds written as stored timestamps are, so that
// rows are counted by comparing strings along an index, without reading a
// date per row.
const bucketsCTE = `WITH RECURSIVE b(i, lo, hi) AS (
	SELECT 0, ?3, strftime('%Y-%m-%dT%H:%M:%fZ', ?3, '+' || ?2 || ' seconds')
	UNION ALL SELECT i + 1, hi, strftime('%Y-%m-%dT%H:%M:%fZ', hi, '+' || ?2 || ' seconds') FROM b WHERE i + 1 < ?1
)`

// windowArgs are bucketsCTE's arguments for w.
func windowArgs(w relay.Window) []any {
	return []any{w.Buckets, int64(w.Bucket / time.Second), relay.FormatTime(w.Start())}
}

// throughputSQL counts per bucket the tasks posted (tasks_created) and the
// completed and blocked reports written (reports_outcomes), each a count
// of one index range.
const throughputSQL = bucketsCTE + `
SELECT i,
	(SELECT count(*) FROM tasks WHERE created_at >= lo AND created_at < hi),
	(SELECT count(*) FROM reports WHERE (kind = 'completed' OR kind = 'blocked') AND created_at >= lo AND created_at < hi AND kind = 'completed'),
	(SELECT count(*) FROM reports WHERE (kind = 'completed' OR kind = 'blocked') AND created_at >= lo AND created_at < hi AND kind = 'blocked')
FROM b`

// Throughput implements relay.InsightService.
func (db *DB) Throughput(ctx context.Context, w relay.Window) ([]relay.ThroughputBucket, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	out := make([]relay.ThroughputBucket, w.Buckets)
	for i := range out {
		out[i].Start = relay.FormatTime(w.Start().Add(time.Duration(i) * w.Bucket))
	}
	err := db.read(ctx, "throughput", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, throughputSQL, windowArgs(w)...)
		if err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var b, posted, completed, blocked int
			if err := rows.Scan(&b, &posted, &completed, &blocked); err != nil {
				return fmt.Errorf("throughput: %w", err)
			}
			if b >= 0 && b < len(out) {
				out[b].Posted, out[b].Completed, out[b].Blocked = posted, completed, blocked
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// openWorkSQL counts open tasks per recipient and state, each state through
// the small index kept for it, which holds the recipient (tasks_queue,
// tasks_leases; the planner, without statistics, would rather take
// tasks_status_updated and read every row); blocked ones, few, through
// tasks_status_updated.
const openWorkSQL = `SELECT recipient_slug, 0, count(*) FROM tasks INDEXED BY tasks_queue WHERE status = 'queued' GROUP BY recipient_slug
UNION ALL SELECT recipient_slug, 1, count(*) FROM tasks INDEXED BY tasks_leases WHERE status = 'claimed' GROUP BY recipient_slug
UNION ALL SELECT recipient_slug, 2, count(*) FROM tasks WHERE status = 'blocked' GROUP BY recipient_slug`

// OpenWork implements relay.InsightService.
func (db *DB) OpenWork(ctx context.Context) ([]relay.OpenWork, error) {
	bySlug := map[string]*relay.OpenWork{}
	err := db.read(ctx, "open work", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, openWorkSQL)
		if err != nil {
			return fmt.Errorf("open work: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				slug     string
				state, n int
			)
			if err := rows.Scan(&slug, &state, &n); err != nil {
				return fmt.Errorf("open work: %w", err)
			}
			w := bySlug[slug]
			if w == nil {
				w = &relay.OpenWork{Slug: slug}
				bySlug[slug] = w
			}
			switch state {
			case 0:
				w.Queued = n
			case 1:
				w.Claimed = n
			default:
				w.Blocked = n
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("open work: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]relay.OpenWork, 0, len(bySlug))
	for _, w := range bySlug {
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

// outcomesSQL counts per recipient and bucket the tasks that ended
// completed or blocked in it and are so still: a completed or blocked
// task's updated_at is when it ended (tasks_status_updated). The buckets
// drive the join (CROSS JOIN keeps them outside), so that each reads its
// own range of the index rather than every task being compared with every
// bucket.
const outcomesSQL = bucketsCTE + `
SELECT recipient_slug, i, sum(status = 'completed'), sum(status = 'blocked')
FROM b CROSS JOIN tasks
WHERE status IN ('completed', 'blocked') AND updated_at >= lo AND updated_at < hi
GROUP BY recipient_slug, i`

// Outcomes implements relay.InsightService.
func (db *DB) Outcomes(ctx context.Context, w relay.Window) ([]relay.AgentOutcomes, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	bySlug := map[string]*relay.AgentOutcomes{}
	err := db.read(ctx, "outcomes", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, outcomesSQL, windowArgs(w)...)
		if err != nil {
			return fmt.Errorf("outcomes: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				slug                  string
				b, completed, blocked int
			)
			if err := rows.Scan(&slug, &b, &completed, &blocked); err != nil {
				return fmt.Errorf("outcomes: %w", err)
			}
			if b < 0 || b >= w.Buckets {
				continue
			}
			a := bySlug[slug]
			if a == nil {
				a = &relay.AgentOutcomes{Slug: slug, Buckets: make([]relay.OutcomeBucket, w.Buckets)}
				for i := range a.Buckets {
					a.Buckets[i].Start = relay.FormatTime(w.Start().Add(time.Duration(i) * w.Bucket))
				}
				bySlug[slug] = a
			}
			a.Buckets[b].Completed, a.Buckets[b].Blocked = completed, blocked
			a.Completed += completed
			a.Blocked += blocked
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("outcomes: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]relay.AgentOutcomes, 0, len(bySlug))
	for _, a := range bySlug {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

const conversationColumns = `id, parent_task_id, sender_slug, recipient_slug, title, status, hops, created_at, claimed_at, updated_at`

// conversationSQL reads the task that started conversation ?1 and its
// hand-offs (tasks_conversation), oldest first; within one millisecond
// (the stored times' resolution) by hops, so a parent comes before a
// hand-off made in its millisecond (ids within a millisecond are not in
// order); the caller appends the LIMIT.
const conversationSQL = `SELECT ` + conversationColumns + ` FROM tasks WHERE id = ?1
UNION ALL SELECT ` + conversationColumns + ` FROM tasks WHERE conversation_id = ?1
ORDER BY created_at, hops, id`

// conversationPathSQL reads task ?1 and its ancestors up the parent links
// (at most 64 steps; a chain is at most relay.MaxChainLimit deep) that
// are of conversation ?2: a cut conversation still holds the way from its
// first task to the one asked for.
const conversationPathSQL = `WITH RECURSIVE up(id, n) AS (
	SELECT ?1, 0
	UNION ALL SELECT t.parent_task_id, up.n + 1 FROM tasks t JOIN up ON t.id = up.id
	WHERE t.parent_task_id IS NOT NULL AND up.n < 64
)
SELECT ` + conversationColumns + ` FROM up JOIN tasks USING (id) WHERE COALESCE(conversation_id, id) = ?2`

// Conversation implements relay.InsightService.
func (db *DB) Conversation(ctx context.Context, taskID string) (relay.Conversation, error) {
	id, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return relay.Conversation{}, err
	}
	var conv relay.Conversation
	err = db.read(ctx, "conversation", func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT COALESCE(conversation_id, id) FROM tasks WHERE id = ?`, id).Scan(&conv.ID)
		if errors.Is(err, sql.ErrNoRows) {
			return unknownTask(id)
		}
		if err != nil {
			return fmt.Errorf("conversation of %s: %w", id, err)
		}
		conv.Tasks, err = queryAll(ctx, tx, "conversation "+conv.ID, scanConversationTask,
			conversationSQL+limitSQL(relay.MaxConversationTasks+1), conv.ID)
		if err != nil || len(conv.Tasks) <= relay.MaxConversationTasks {
			return err
		}
		path, err := queryAll(ctx, tx, "conversation "+conv.ID, scanConversationTask, conversationPathSQL, id, conv.ID)
		if err != nil {
			return err
		}
		conv.Tasks, conv.Truncated = withPath(conv.Tasks, path, relay.MaxConversationTasks), true
		return nil
	})
	if err != nil {
		return relay.Conversation{}, err
	}
	return conv, nil
}

// withPath cuts oldest (a conversation's tasks, oldest first) to max
// tasks that hold every task of path (the way from its first task to the
// one asked for, which may be past the cut): the oldest others, then path,
// oldest first.
func withPath(oldest, path []relay.ConversationTask, max int) []relay.ConversationTask {
	on := make(map[string]bool, len(path))
	for _, t := range path {
		on[t.ID] = true
	}
	out := make([]relay.ConversationTask, 0, max)
	for _, t := range oldest {
		if len(out) >= max-len(path) {
			break
		}
		if !on[t.ID] {
			out = append(out, t)
		}
	}
	out = append(out, path...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func scanConversationTask(row rowScanner) (relay.ConversationTask, error) {
	var (
		t                 relay.ConversationTask
		status            string
		parent, claimedAt sql.NullString
	)
	err := row.Scan(&t.ID, &parent, &t.SenderSlug, &t.RecipientSlug, &t.Title, &status, &t.Hops, &t.CreatedAt, &claimedAt, &t.UpdatedAt)
	t.Status, t.ParentTaskID, t.ClaimedAt = relay.TaskStatus(status), parent.String, claimedAt.String
	return t, err
}
