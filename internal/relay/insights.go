package relay

import (
	"context"
	"time"
)

// The dashboard's charts read aggregates over bounded windows of time, so a
// chart costs the same on a relay with a year of tasks as on a new one
// (retention deletes finished tasks, but a window never depends on it).
const (
	// MaxInsightBuckets bounds the buckets of one Window.
	MaxInsightBuckets = 240
	// MaxInsightSpan bounds how far back a Window reaches.
	MaxInsightSpan = 31 * 24 * time.Hour
	// MinInsightBucket is the narrowest bucket.
	MinInsightBucket = time.Minute
	// MaxConversationTasks bounds the tasks Conversation returns; a larger
	// conversation comes back with Truncated set.
	MaxConversationTasks = 500
	// MaxTZOffsetMinutes bounds the viewer's offset from UTC that windows
	// are aligned to (UTC−14:00 to UTC+14:00).
	MaxTZOffsetMinutes = 14 * 60
)

// Window is a bounded span of time cut into Buckets equal buckets of
// Bucket each, the last one ending at End (exclusive).
type Window struct {
	End     time.Time
	Bucket  time.Duration
	Buckets int
}

// Start is the beginning of the window's first bucket (inclusive).
func (w Window) Start() time.Time { return w.End.Add(-time.Duration(w.Buckets) * w.Bucket) }

// Validate refuses a window that is empty, too fine or too long.
func (w Window) Validate() error {
	switch {
	case w.End.IsZero():
		return Errorf(EInvalidRequest, "window: no end time.")
	case w.Bucket < MinInsightBucket:
		return Errorf(EInvalidRequest, "window: a bucket must be at least %s (got %s).", MinInsightBucket, w.Bucket)
	case w.Bucket%time.Second != 0:
		return Errorf(EInvalidRequest, "window: a bucket must be a whole number of seconds (got %s).", w.Bucket)
	case w.Buckets < 1 || w.Buckets > MaxInsightBuckets:
		return Errorf(EInvalidRequest, "window: 1..%d buckets (got %d).", MaxInsightBuckets, w.Buckets)
	case time.Duration(w.Buckets)*w.Bucket > MaxInsightSpan:
		return Errorf(EInvalidRequest, "window: at most %s long (got %s).", MaxInsightSpan, time.Duration(w.Buckets)*w.Bucket)
	}
	return nil
}

// AlignedWindow is the window of n buckets of bucket each whose last bucket
// holds now, with bucket boundaries on the viewer's clock: offsetMinutes is
// the viewer's offset from UTC (east positive), so hours start at the
// viewer's full hour (also in zones of half an hour) and days at the
// viewer's midnight. bucket must divide a day or be a whole number of days.
func AlignedWindow(now time.Time, offsetMinutes int, bucket time.Duration, n int) (Window, error) {
	if offsetMinutes < -MaxTZOffsetMinutes || offsetMinutes > MaxTZOffsetMinutes {
		return Window{}, Errorf(EInvalidRequest, "tzOffsetMinutes: must be within ±%d (got %d).", MaxTZOffsetMinutes, offsetMinutes)
	}
	if bucket < MinInsightBucket {
		return Window{}, Errorf(EInvalidRequest, "window: a bucket must be at least %s (got %s).", MinInsightBucket, bucket)
	}
	off := time.Duration(offsetMinutes) * time.Minute
	// On the viewer's clock as if it were UTC, truncated to the bucket,
	// then back to real time.
	local := now.UTC().Add(off)
	start := local.Truncate(bucket).Add(-off)
	w := Window{End: start.Add(bucket), Bucket: bucket, Buckets: n}
	return w, w.Validate()
}

// ThroughputBucket counts what happened in one bucket of a Window: tasks
// posted, and outcome reports (a task completed, a task blocked).
type ThroughputBucket struct {
	// Start is when the bucket begins (TimeLayout).
	Start     string `json:"start"`
	Posted    int    `json:"posted"`
	Completed int    `json:"completed"`
	Blocked   int    `json:"blocked"`
}

// Durations summarizes a set of durations in milliseconds: how many, the
// median and the 90th percentile (nearest rank: the smallest value with at
// least that share of the set at or below it). Zero when Count is 0.
type Durations struct {
	Count    int   `json:"count"`
	MedianMs int64 `json:"medianMs"`
	P90Ms    int64 `json:"p90Ms"`
}

// AgentLatency is how quickly one agent took and did its tasks, over the
// tasks posted to it in a window: Claim from posting to its (latest) claim,
// Finish from that claim to completion (completed tasks only).
type AgentLatency struct {
	Slug   string    `json:"slug"`
	Claim  Durations `json:"claim"`
	Finish Durations `json:"finish"`
}

// OpenWork is the open tasks one agent has now, by state.
type OpenWork struct {
	Slug    string `json:"slug"`
	Queued  int    `json:"queued"`
	Claimed int    `json:"claimed"`
	Blocked int    `json:"blocked"`
}

// OutcomeBucket counts one agent's tasks that ended in one bucket.
type OutcomeBucket struct {
	Start     string `json:"start"`
	Completed int    `json:"completed"`
	Blocked   int    `json:"blocked"`
}

// AgentOutcomes is how one agent's tasks ended over a window, bucket by
// bucket: the tasks it completed, and those it left blocked, counted when
// they ended and only while they still are so (a blocked task requeued
// and completed since counts as completed). Completed and Blocked are the
// window's totals.
type AgentOutcomes struct {
	Slug      string          `json:"slug"`
	Buckets   []OutcomeBucket `json:"buckets"`
	Completed int             `json:"completed"`
	Blocked   int             `json:"blocked"`
}

// ActivityInsights are the Activity page's charts: throughput per hour,
// each agent's latencies, and the open work now.
type ActivityInsights struct {
	// Throughput has one bucket per hour, oldest first, every hour present.
	Throughput []ThroughputBucket `json:"throughput"`
	// LatencySince is where the latencies' window starts (TimeLayout).
	LatencySince string         `json:"latencySince"`
	Latencies    []AgentLatency `json:"latencies"`
	OpenWork     []OpenWork     `json:"openWork"`
	// At is when the aggregates were read (TimeLayout).
	At string `json:"at"`
}

// ConversationTask is one task of a conversation, as its tree and graph
// show it.
type ConversationTask struct {
	ID            string     `json:"id"`
	ParentTaskID  string     `json:"parentTaskId,omitempty"`
	SenderSlug    string     `json:"senderSlug"`
	RecipientSlug string     `json:"recipientSlug"`
	Title         string     `json:"title"`
	Status        TaskStatus `json:"status"`
	Hops          int        `json:"hops"`
	CreatedAt     string     `json:"createdAt"`
	ClaimedAt     string     `json:"claimedAt,omitempty"`
	UpdatedAt     string     `json:"updatedAt"`
}

// Conversation is every task of one conversation that this relay holds,
// oldest first: the task that started it (ID) and every hand-off from it.
type Conversation struct {
	ID    string             `json:"id"`
	Tasks []ConversationTask `json:"tasks"`
	// Truncated is set when the conversation has more than
	// MaxConversationTasks tasks; the oldest are returned, and the task
	// asked for with its way up from the first task.
	Truncated bool `json:"truncated,omitempty"`
}

// InsightService reads the aggregates behind the dashboard's charts. Each
// reads a bounded window through indexes made for it.
type InsightService interface {
	// Throughput counts tasks posted, completed and blocked per bucket of w,
	// every bucket present, oldest first. Errors: invalid_request.
	Throughput(ctx context.Context, w Window) ([]ThroughputBucket, error)
	// Latencies returns, per recipient of a task posted in [since, until),
	// the time to claim and the time to finish, by slug.
	Latencies(ctx context.Context, since, until time.Time) ([]AgentLatency, error)
	// OpenWork counts each agent's open tasks by state, by slug.
	OpenWork(ctx context.Context) ([]OpenWork, error)
	// Outcomes counts, per bucket of w (every bucket present), each agent's
	// tasks that ended completed or blocked then and are so still, for the
	// agents with any, by slug.
	// Errors: invalid_request.
	Outcomes(ctx context.Context, w Window) ([]AgentOutcomes, error)
	// Conversation returns the conversation taskID belongs to. Errors:
	// invalid_request, unknown_task.
	Conversation(ctx context.Context, taskID string) (Conversation, error)
}
