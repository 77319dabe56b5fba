package relay

import "sync"

// Change types carried to the dashboard (events "relay:change").
const (
	ChangeTask         = "task"
	ChangeTasksRemoved = "tasks-removed"
	ChangeAgent        = "agent"
	ChangeAgentRemoved = "agent-removed"
	ChangeJournal      = "event" // a journal event (Change.Event)
	ChangeInvite       = "invite"
	ChangeSettings     = "settings"
)

// Change is one committed change, published after its transaction commits.
type Change struct {
	Type     string       `json:"type"`
	Task     *TaskSummary `json:"task,omitempty"`
	IDs      []string     `json:"ids,omitempty"`
	Agent    *Agent       `json:"agent,omitempty"`
	Slug     string       `json:"slug,omitempty"`
	Event    *Event       `json:"event,omitempty"`
	Invite   *Invite      `json:"invite,omitempty"`
	Settings *Settings    `json:"settings,omitempty"`
	// TaskID and Entries carry new run activity (type "activity").
	TaskID  string          `json:"taskId,omitempty"`
	Entries []ActivityEntry `json:"entries,omitempty"`
	// Worker carries a worker's status (type "worker").
	Worker *WorkerStatus `json:"worker,omitempty"`
}

// Broker fans changes out to subscribers. A subscriber that falls behind by
// more than its buffer is dropped (its channel closed) rather than slowing
// the relay; it should reload a snapshot and subscribe again.
//
// The zero value is ready to use.
type Broker struct {
	mu   sync.Mutex
	subs map[chan Change]struct{}
}

// Subscribe returns a channel of changes and a function that ends the subscription.
func (b *Broker) Subscribe(buffer int) (<-chan Change, func()) {
	c := make(chan Change, buffer)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[chan Change]struct{})
	}
	b.subs[c] = struct{}{}
	b.mu.Unlock()
	return c, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[c]; ok {
			delete(b.subs, c)
			close(c)
		}
	}
}

// Publish delivers changes to every subscriber without blocking.
func (b *Broker) Publish(changes ...Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.subs {
		for _, ch := range changes {
			select {
			case c <- ch:
			default:
				delete(b.subs, c)
				close(c)
			}
			if _, ok := b.subs[c]; !ok {
				break
			}
		}
	}
}

// Close ends every subscription.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.subs {
		delete(b.subs, c)
		close(c)
	}
}
