package relay

import "context"

// Push event kinds. An update carries the journal event type instead
// (task-claimed, task-completed, …).
const (
	// PushTask is a task queued for the stream's agent.
	PushTask = "task"
)

// The push stream's wire protocol, shared by the relay that serves it and
// the clients that follow it: its route and its SSE event names.
const (
	// PushPath is the push stream's route.
	PushPath = "/api/push"
	// PushEventReady: data {"agent","cursor"}: the stream is open.
	PushEventReady = "ready"
	// PushEventTask: data PushEvent: a task queued for the agent.
	PushEventTask = "task"
	// PushEventUpdate: data PushEvent: an update addressed to it.
	PushEventUpdate = "update"
	// PushEventMissed: data {"cursor"}: events after the cursor were
	// trimmed, or never written.
	PushEventMissed = "missed"
)

// Push stream limits.
const (
	// DefaultPushBatch is how many push events one read returns at most.
	DefaultPushBatch = 100
	// DefaultMaxPushEvents is how many push events the relay keeps at least
	// (it trims the older ones every 100th event, so it holds up to 99
	// more); a stream whose cursor is older is told it may have missed some.
	DefaultMaxPushEvents = 20000
)

// PushEvent is one entry of an agent's push stream: a task queued for the
// agent (Kind "task") or an update addressed to it (Kind is the journal
// event type). Sequences increase across all agents and never repeat.
type PushEvent struct {
	Sequence int64  `json:"sequence"`
	Agent    string `json:"agent"`
	Kind     string `json:"kind"`
	TaskID   string `json:"taskId"`
	Title    string `json:"title"`
	// From is the task's sender for a task, the other party for an update.
	From string `json:"from"`
	// Priority is the task's priority (1..3), 0 when unknown.
	Priority int `json:"priority,omitempty"`
	// Message is the task's instructions (possibly shortened) or the
	// update's summary.
	Message   string `json:"message"`
	CreatedAt string `json:"createdAt"`
	// ConversationID is the task's conversation (see Task); empty once the
	// task is no longer kept.
	ConversationID string `json:"conversationId,omitempty"`
	// Signature is the signature mark (MarkVerified, MarkUnverified,
	// MarkMismatch) of a task another relay told this one about; empty for
	// a local task.
	Signature string `json:"signature,omitempty"`
	// Hops is the task's hand-offs from the start of its conversation.
	Hops int `json:"hops,omitempty"`
	// ReplySession is the sender's live session the task was posted
	// through, which its answers go to ("" for none).
	ReplySession string `json:"replySession,omitempty"`
	// Result is the deliverable of a task-completed update (its first
	// MaxPushResult bytes), "" for other events.
	Result string `json:"result,omitempty"`
}

// MaxPushResult bounds the result a push event carries; get_task has all
// of it.
const MaxPushResult = 4000

// IsTask reports whether the event is a task queued for the agent.
func (e PushEvent) IsTask() bool { return e.Kind == PushTask }

// PushBatch is the result of one push read.
type PushBatch struct {
	Events []PushEvent `json:"events"`
	// Cursor is the sequence to resume after.
	Cursor int64 `json:"cursor"`
	// MayHaveMissed is set when events after the given cursor were already trimmed.
	MayHaveMissed bool `json:"mayHaveMissed,omitempty"`
	// More is set when the read stopped at its limit: more events may
	// follow the cursor at once (a session's read passes over events meant
	// for other sessions, so Events can be shorter than the limit).
	More bool `json:"more,omitempty"`
}

// PushSource reads agents' push streams; internal/store implements it.
type PushSource interface {
	// OpenPush makes sure the agent's push events are written from now on
	// (they are only for agents whose stream was opened) and returns the
	// sequence after which the stream holds all of them; a cursor older
	// than that may have missed some.
	OpenPush(ctx context.Context, slug string) (since int64, err error)
	// PushCursor is the newest push sequence: a stream that starts "now"
	// resumes after it.
	PushCursor(ctx context.Context) (int64, error)
	// SessionPushEvents returns the push events of agent s.AgentSlug after
	// the cursor, oldest first, at most limit (clamped to
	// 1..DefaultPushBatch): all of them when s.ID is "". For one live
	// session of the agent (s.ID set; s.Name optional) it leaves out the
	// updates on tasks another session of the agent posted
	// (Task.ReplySession) and the tasks meant for another session
	// (Task.TargetSession naming neither s.ID nor s.Name). The cursor
	// still passes over them.
	SessionPushEvents(ctx context.Context, s LiveSession, after int64, limit int) (PushBatch, error)
	// SeeLiveSession records that the agent's session s has its push
	// stream open now (its name too, when s.Name is set): it is live for
	// delivery for LiveStreamWindow.
	SeeLiveSession(ctx context.Context, s LiveSession) error
	// StreamOpened records that the agent has one more push stream open,
	// which holds it online until its last stream closes (Presence). done
	// records the stream's close; call it once the stream has ended.
	StreamOpened(ctx context.Context, slug string) (done func(), err error)
}
