package relay

import "context"

// Settings are the operator's relay-wide settings, stored in the database.
type Settings struct {
	// MaxChainDepth is the hand-off depth limit for tasks posted by worker runs (0..10).
	MaxChainDepth int `json:"maxChainDepth"`
	// WorkersPaused stops every worker from claiming new tasks.
	WorkersPaused bool `json:"workersPaused"`
	// MaxOpenTasksPerSender caps the open (queued, claimed, blocked) tasks
	// one sender may have; post_task past it fails with too_many_open_tasks.
	// 1..MaxOpenTasksLimit; 0 in an update keeps the current value.
	MaxOpenTasksPerSender int `json:"maxOpenTasksPerSender,omitempty"`
}

// Open-task cap per sender.
const (
	DefaultMaxOpenTasksPerSender = 1000
	MaxOpenTasksLimit            = 1_000_000
)

// TaskCounts counts tasks by state.
type TaskCounts struct {
	Queued    int `json:"queued"`
	Claimed   int `json:"claimed"`
	Blocked   int `json:"blocked"`
	Completed int `json:"completed"`
	Cancelled int `json:"cancelled"`
}

// AgentCounts counts agents, humans included.
type AgentCounts struct {
	Total  int `json:"total"`
	Online int `json:"online"`
}

// Stats are the overview counts.
type Stats struct {
	Tasks  TaskCounts  `json:"tasks"`
	Agents AgentCounts `json:"agents"`
	// DoneToday counts tasks completed since local midnight.
	DoneToday int `json:"doneToday"`
}

// SweepResult tells what one maintenance pass did.
type SweepResult struct {
	Requeued int `json:"requeued"`
	Pruned   int `json:"pruned"`
	// PrunedInvites are expired, revoked or used-up invites past retention.
	PrunedInvites int `json:"prunedInvites,omitempty"`
	// PrunedActivity are run-log entries of tasks idle past retention.
	PrunedActivity int `json:"prunedActivity,omitempty"`
}

// AdminService holds settings, counts, maintenance and health.
type AdminService interface {
	// Settings returns the current settings.
	Settings(ctx context.Context) (Settings, error)
	// UpdateSettings stores settings. Errors: invalid_request.
	UpdateSettings(ctx context.Context, s Settings) (Settings, error)
	// Stats returns the overview counts.
	Stats(ctx context.Context) (Stats, error)
	// Sweep requeues expired leases (telling senders), deletes expired run
	// tokens and prunes finished tasks past retention.
	Sweep(ctx context.Context) (SweepResult, error)
	// Healthy reports whether the last write succeeded.
	Healthy() bool
	// OperatorSlug is the human operator's slug.
	OperatorSlug() string
	// Subscribe streams committed changes; see Broker.
	Subscribe(buffer int) (<-chan Change, func())
}

// Service is everything the relay does; internal/store implements it.
type Service interface {
	AgentService
	TaskService
	EventService
	InviteService
	AdminService
	WorkerService
	InsightService
}

// Validate checks settings.
func (s Settings) Validate() (Settings, error) {
	if s.MaxChainDepth < 0 || s.MaxChainDepth > MaxChainLimit {
		return s, Errorf(EInvalidRequest, "maxChainDepth: must be 0..%d.", MaxChainLimit)
	}
	if s.MaxOpenTasksPerSender < 0 || s.MaxOpenTasksPerSender > MaxOpenTasksLimit {
		return s, Errorf(EInvalidRequest, "maxOpenTasksPerSender: must be 1..%d (0 keeps the current value).", MaxOpenTasksLimit)
	}
	return s, nil
}
