package relay

import (
	"context"
	"strings"
	"time"
)

// TaskStatus is the state of a task.
type TaskStatus string

// Task states. Which action each allows, and to whom, is CanAct
// (lifecycle.go); docs/agents.md has the transition table.
const (
	StatusQueued    TaskStatus = "queued"
	StatusClaimed   TaskStatus = "claimed"
	StatusBlocked   TaskStatus = "blocked"
	StatusCompleted TaskStatus = "completed"
	StatusCancelled TaskStatus = "cancelled"
)

// Statuses lists every task state in lifecycle order.
var Statuses = []TaskStatus{StatusQueued, StatusClaimed, StatusBlocked, StatusCompleted, StatusCancelled}

// Open reports whether a task in status s still needs work.
func (s TaskStatus) Open() bool {
	return s == StatusQueued || s == StatusClaimed || s == StatusBlocked
}

// Valid reports whether s is a known status.
func (s TaskStatus) Valid() bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Report kinds.
const (
	ReportProgress  = "progress"
	ReportCompleted = "completed"
	ReportBlocked   = "blocked"
	ReportChanges   = "changes"
)

// Claim channels recorded on a claimed task.
const (
	ViaChat   = "chat"
	ViaWorker = "worker"
)

// Priorities.
const (
	PriorityLow    = 1
	PriorityNormal = 2
	PriorityUrgent = 3
)

// Lease bounds, in seconds.
const (
	DefaultLeaseSeconds = 900
	MinLeaseSeconds     = 60
	MaxLeaseSeconds     = 86400
)

// MaxWait bounds a long-poll, so client tool-call timeouts never hit.
const MaxWait = 25 * time.Second

// DefaultChainLimit is the default hand-off limit: how many hops a
// conversation may take from the task a person started.
const DefaultChainLimit = 3

// MaxTargetSession bounds a task's targetSession (a session id or name), in characters.
const MaxTargetSession = 200

// Report is one entry of a task's timeline.
type Report struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Result    string `json:"result,omitempty"`
	CreatedAt string `json:"createdAt"`
}

// Task is a unit of work sent from one agent to another, with its timeline.
type Task struct {
	ID                   string     `json:"id"`
	SenderSlug           string     `json:"senderSlug"`
	RecipientSlug        string     `json:"recipientSlug"`
	Title                string     `json:"title"`
	Instructions         string     `json:"instructions"`
	RequiredCapabilities []string   `json:"requiredCapabilities"`
	Priority             int        `json:"priority"`
	Status               TaskStatus `json:"status"`
	CreatedAt            string     `json:"createdAt"`
	UpdatedAt            string     `json:"updatedAt"`
	ClaimedAt            string     `json:"claimedAt,omitempty"`
	LeaseExpiresAt       string     `json:"leaseExpiresAt,omitempty"`
	ParentTaskID         string     `json:"parentTaskId,omitempty"`
	Depth                int        `json:"depth"`
	// ConversationID is the conversation the task belongs to: the id of the
	// task that started it, inherited by every hand-off from it.
	ConversationID string `json:"conversationId"`
	// Hops counts the hand-offs from the conversation's first task to this
	// one, across agents and sessions; the hand-off limit bounds it.
	Hops int `json:"hops"`
	// TargetSession names the recipient's session (an id or exact name) the
	// task is meant for; empty for any.
	TargetSession string `json:"targetSession,omitempty"`
	// ReplySession is the sender's live session the task was posted
	// through: its updates reach that session's push stream only.
	ReplySession string   `json:"replySession,omitempty"`
	ClaimedVia   string   `json:"claimedVia,omitempty"`
	Reports      []Report `json:"reports"`
	// Signature is the mark of a task another relay told this one about
	// (MarkVerified, MarkUnverified, MarkMismatch); empty for a local task.
	Signature string `json:"signature,omitempty"`
}

// ReportExcerpt is the shortened latest report shown on task cards.
type ReportExcerpt struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	CreatedAt string `json:"createdAt"`
}

// TaskSummary is a task without instructions and timeline, for lists.
type TaskSummary struct {
	ID                   string         `json:"id"`
	SenderSlug           string         `json:"senderSlug"`
	RecipientSlug        string         `json:"recipientSlug"`
	Title                string         `json:"title"`
	RequiredCapabilities []string       `json:"requiredCapabilities"`
	Priority             int            `json:"priority"`
	Status               TaskStatus     `json:"status"`
	CreatedAt            string         `json:"createdAt"`
	UpdatedAt            string         `json:"updatedAt"`
	ClaimedAt            string         `json:"claimedAt,omitempty"`
	LeaseExpiresAt       string         `json:"leaseExpiresAt,omitempty"`
	ParentTaskID         string         `json:"parentTaskId,omitempty"`
	Depth                int            `json:"depth"`
	ConversationID       string         `json:"conversationId"`
	Hops                 int            `json:"hops"`
	TargetSession        string         `json:"targetSession,omitempty"`
	ClaimedVia           string         `json:"claimedVia,omitempty"`
	ReportCount          int            `json:"reportCount"`
	LatestReport         *ReportExcerpt `json:"latestReport,omitempty"`
}

// RelatedTasks are the tasks a task was handed off from and to.
type RelatedTasks struct {
	Parent   *TaskSummary  `json:"parent,omitempty"`
	Children []TaskSummary `json:"children"`
}

// PostTaskInput is a new task.
type PostTaskInput struct {
	SenderSlug           string   `json:"senderSlug"`
	RecipientSlug        string   `json:"recipientSlug"`
	Title                string   `json:"title"`
	Instructions         string   `json:"instructions"`
	RequiredCapabilities []string `json:"requiredCapabilities"`
	// Priority is 1, 2 or 3; 0 means the default (2).
	Priority     int    `json:"priority"`
	ParentTaskID string `json:"parentTaskId,omitempty"`
	// TargetSession names the recipient's session the task is for (a session
	// id or exact session name on the recipient's computer); optional.
	TargetSession string `json:"targetSession,omitempty"`
	// FromAgent marks a post made with the sender's own agent or run token
	// (not the admin token or the dashboard). Such a post may not go to
	// the sender itself unless it names a TargetSession, and when it
	// continues a conversation (a parent task, or the run's task) it is
	// refused with chain_limit past the hand-off limit.
	FromAgent bool `json:"-"`
	// ReplySession is the sender's live session the post came through
	// (LiveSessionFrom), "" for none. The task's updates then reach that
	// session's push stream only; and a post without ParentTaskID made
	// while that session holds a claimed task continues that task's
	// conversation.
	ReplySession string `json:"-"`
}

// MaxClaimSessions bounds ClaimInput.ForSessions (a session worker's id,
// name and label).
const MaxClaimSessions = 8

// ClaimInput asks for the recipient's next task.
type ClaimInput struct {
	RecipientSlug string
	// Wait is how long to long-poll for a task; 0 returns at once. Capped at MaxWait by MCP.
	Wait time.Duration
	// LeaseSeconds is the lease length; 0 means DefaultLeaseSeconds.
	LeaseSeconds int
	// FromSenders, when non-nil, restricts the claim to these senders
	// (at most MaxWorkerSenders); an empty non-nil slice claims nothing.
	FromSenders []string
	// ForSessions, when non-nil, restricts the claim to tasks that name no
	// target session or name one of these (a session worker's session id
	// and names; at most MaxClaimSessions).
	ForSessions []string
	// LeaveLiveSessions leaves the tasks whose target session is one of
	// the recipient's live sessions (its push stream seen within
	// LiveStreamWindow) to that session: a worker not bound to a session
	// claims them not. A claim through a live session (Session set) always
	// leaves them, except those aimed at itself (its id or its name).
	LeaveLiveSessions bool
	// Via is ViaChat or ViaWorker.
	Via string
	// Session is the live session claiming (LiveSessionFrom), "" for none.
	Session string
}

// ReportInput is a report by the task's current holder.
type ReportInput struct {
	ReporterSlug string
	TaskID       string
	Kind         string // progress, completed or blocked
	Message      string
	Result       string
}

// TaskFilter selects tasks for the dashboard and the CLI.
type TaskFilter struct {
	Statuses []TaskStatus `json:"statuses,omitempty"`
	// Agent matches tasks it sent or received.
	Agent string `json:"agent,omitempty"`
	// Query matches a substring of the title, case-insensitively, or the
	// part of the id (IDPart), as the dashboard's search does.
	Query string `json:"query,omitempty"`
	// Limit defaults to 100 and is clamped to 1..500.
	Limit int `json:"limit,omitempty"`
}

// Validate refuses a filter no task could pass, or that SQLite would refuse:
// a status that is none, more statuses than there are (each is a bound
// variable), or a query longer than any title (MaxShortText), whose pattern
// is too complex past some thousands.
func (f TaskFilter) Validate() error {
	if len(f.Statuses) > len(Statuses) {
		return Errorf(EInvalidRequest, "statuses: at most %d (there are no more task statuses).", len(Statuses))
	}
	for _, s := range f.Statuses {
		if !s.Valid() {
			return Errorf(EInvalidRequest, "status: %q is not a task status.", s)
		}
	}
	_, err := Text("query", f.Query, 0, MaxShortText)
	return err
}

// IDPart is the part of a task id the Query names, in lowercase: the Query
// itself once it has 8 characters or more (fewer would match too many ids),
// else "". Ids are time-ordered, so their starts are shared by the tasks of
// a minute and their ends tell them apart.
func (f TaskFilter) IDPart() string {
	if q := strings.TrimSpace(f.Query); len(q) >= 8 {
		return strings.ToLower(q)
	}
	return ""
}

// TaskService is the task lifecycle. Every method that names an acting slug
// refreshes that agent's presence.
type TaskService interface {
	// PostTask queues a task. Errors: invalid_request, unknown_agent,
	// unknown_task, task_access_denied, chain_limit, self_task_refused,
	// recipient_lacks_capability.
	PostTask(ctx context.Context, in PostTaskInput) (Task, error)
	// ClaimNext claims the recipient's most urgent, oldest queued task,
	// waiting up to in.Wait for one. It returns nil when there is none, and
	// returns promptly when ctx ends or the service closes.
	ClaimNext(ctx context.Context, in ClaimInput) (*Task, error)
	// RenewLease extends the lease of a claimed task. Errors: task_update_denied, unknown_task.
	RenewLease(ctx context.Context, reporter, taskID string, leaseSeconds int) (Task, error)
	// ReportTask adds progress, completes or blocks. Errors: task_update_denied, unknown_task.
	ReportTask(ctx context.Context, in ReportInput) (Task, error)
	// ReleaseTask gives a claimed task back to the queue. Errors: task_update_denied.
	ReleaseTask(ctx context.Context, reporter, taskID, reason string) (Task, error)
	// GetTask returns a task to its sender or recipient. Errors: unknown_task, task_access_denied.
	GetTask(ctx context.Context, requester, taskID string) (Task, error)
	// CancelTask cancels an open task. Errors: task_cancel_denied, invalid_task_state.
	CancelTask(ctx context.Context, sender, taskID, reason string) (Task, error)
	// RequeueTask sends a blocked task back. Errors: task_requeue_denied,
	// invalid_task_state, chain_limit (from a worker run, past the hand-off limit).
	RequeueTask(ctx context.Context, sender, taskID, note string) (Task, error)
	// RequestChanges reopens a completed task. Errors: task_changes_denied,
	// invalid_task_state, chain_limit (from a worker run, past the hand-off limit).
	RequestChanges(ctx context.Context, sender, taskID, note string) (Task, error)
	// Task returns any task without an access check (operator views). Errors: unknown_task.
	Task(ctx context.Context, taskID string) (Task, error)
	// ListTasks returns summaries ordered by updatedAt, newest first.
	ListTasks(ctx context.Context, f TaskFilter) ([]TaskSummary, error)
	// RelatedTasks returns the parent and children of a task. Errors: unknown_task.
	RelatedTasks(ctx context.Context, taskID string) (RelatedTasks, error)
}
