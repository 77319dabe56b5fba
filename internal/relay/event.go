package relay

import "context"

// Event types in the update journal.
const (
	EventTaskClaimed   = "task-claimed"
	EventTaskProgress  = "task-progress"
	EventTaskCompleted = "task-completed"
	EventTaskBlocked   = "task-blocked"
	EventTaskCancelled = "task-cancelled"
	EventTaskRequeued  = "task-requeued"
)

// DefaultMaxEvents is how many events the journal keeps.
const DefaultMaxEvents = 10000

// Event is one entry of the change-only update journal, addressed to one agent.
type Event struct {
	Sequence      int64  `json:"sequence"`
	RecipientSlug string `json:"recipientSlug"`
	Type          string `json:"type"`
	TaskID        string `json:"taskId"`
	Summary       string `json:"summary"`
	CreatedAt     string `json:"createdAt"`
}

// Updates is the result of read_updates.
type Updates struct {
	Updates []Event `json:"updates"`
	Cursor  int64   `json:"cursor"`
	// MayHaveMissedUpdates is set when the journal was trimmed past the reader's cursor.
	MayHaveMissedUpdates bool `json:"mayHaveMissedUpdates,omitempty"`
}

// EventFilter selects journal entries for the dashboard, newest first.
type EventFilter struct {
	// Agent limits to events delivered to this slug.
	Agent string `json:"agent,omitempty"`
	// Before, when > 0, returns only events with a smaller sequence.
	Before int64 `json:"before,omitempty"`
	// Limit defaults to 50 and is clamped to 1..500.
	Limit int `json:"limit,omitempty"`
}

// EventService reads the journal.
type EventService interface {
	// ReadUpdates returns the agent's unread events and advances its cursor.
	ReadUpdates(ctx context.Context, slug string, limit int) (Updates, error)
	// ListEvents returns events newest first, for the operator.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)
}
