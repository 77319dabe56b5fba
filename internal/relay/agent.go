package relay

import (
	"context"
	"fmt"
)

// AgentKind tells software agents from the human operator.
type AgentKind string

// Agent kinds.
const (
	KindAgent AgentKind = "agent"
	KindHuman AgentKind = "human"
)

// Availability values (Presence.Availability).
const (
	Online  = "online"
	Offline = "offline"
)

// DefaultOperatorSlug is the slug of the human operator unless the
// configuration names another.
const DefaultOperatorSlug = "operator"

// DefaultRetentionDays is how long completed and cancelled tasks are kept
// unless the configuration says otherwise.
const DefaultRetentionDays = 30

// DefaultCapabilities are the suggested capability labels.
var DefaultCapabilities = []string{"text-input", "text-output", "image-input", "image-output", "code-execution", "web-search", "file-system"}

// OwnerSet tells which profile fields the operator set and locked.
type OwnerSet struct {
	DisplayName bool `json:"displayName"`
	Details     bool `json:"details"`
}

// Agent is an addressable participant: an AI agent or the human operator.
// The token and the read cursor are never part of it.
type Agent struct {
	Slug         string    `json:"slug"`
	Kind         AgentKind `json:"kind"`
	DisplayName  string    `json:"displayName"`
	ModelSlug    string    `json:"modelSlug"`
	Capabilities []string  `json:"capabilities"`
	// Details is the agent's role: a free-text description of what it does.
	Details      string `json:"details,omitempty"`
	RegisteredAt string `json:"registeredAt"`
	// LastSeenAt is when the relay last heard from the agent; while a
	// connection holds it online (Connected), the time it was read.
	LastSeenAt string   `json:"lastSeenAt"`
	HasToken   bool     `json:"hasToken"`
	OwnerSet   OwnerSet `json:"ownerSet"`
	// Availability is Online or Offline, by the rules of Presence.
	Availability string `json:"availability"`
	// Connected is set while a live connection holds the agent online (a
	// push stream open on this relay, or its relay's word in a mesh)
	// rather than the OnlineWindow of its last call: it stays online
	// until a change says otherwise.
	Connected bool `json:"connected,omitempty"`
	// Relay names the relay that owns the agent; set only in a mesh.
	Relay string `json:"relay,omitempty"`
	// Enrolled is set for an agent that enrolled itself with an invite.
	Enrolled bool `json:"enrolled,omitempty"`
	// RetiredAt is when the agent was retired (RetireAgent), "" while it
	// is not. A retired agent has no token, is in no agent list and gets no
	// new tasks; it keeps its name and its tasks.
	RetiredAt string `json:"retiredAt,omitempty"`
}

// RegisterInput is what an agent sends to register_agent.
type RegisterInput struct {
	Slug         string
	DisplayName  string
	ModelSlug    string
	Capabilities []string
	// Details is nil when the caller did not send it; an unlocked role is then
	// kept as it is (the upstream relay cleared it).
	Details *string
}

// CreateAgentInput creates an agent from the dashboard or CLI.
type CreateAgentInput struct {
	Slug         string    `json:"slug"`
	DisplayName  string    `json:"displayName"`
	ModelSlug    string    `json:"modelSlug"`
	Capabilities []string  `json:"capabilities"`
	Details      string    `json:"details,omitempty"`
	Kind         AgentKind `json:"kind,omitempty"`
}

// ProfileUpdate is the operator's edit of an agent's name and role. A nil
// field is left alone; an empty Details clears the role and unlocks it.
type ProfileUpdate struct {
	DisplayName *string `json:"displayName,omitempty"`
	Details     *string `json:"details,omitempty"`
}

// AgentService manages agents and their tokens.
type AgentService interface {
	// RegisterAgent creates or updates the agent slug. Owner-locked name and
	// role are kept. It refreshes presence.
	RegisterAgent(ctx context.Context, in RegisterInput) (Agent, error)
	// Heartbeat refreshes presence. Errors: unknown_agent.
	Heartbeat(ctx context.Context, slug string) (Agent, error)
	// GetAgent returns one agent without touching presence. Errors: unknown_agent.
	GetAgent(ctx context.Context, slug string) (Agent, error)
	// ListAgents returns agents ordered by slug; offline ones only if asked.
	ListAgents(ctx context.Context, includeOffline bool) ([]Agent, error)
	// CreateAgent creates an agent and, for kind agent, its token (returned
	// once). Errors: invalid_request, agent_exists.
	CreateAgent(ctx context.Context, in CreateAgentInput) (Agent, string, error)
	// UpdateProfile sets and locks name and/or role. Errors: unknown_agent, invalid_request.
	UpdateProfile(ctx context.Context, slug string, in ProfileUpdate) (Agent, error)
	// IssueToken replaces the agent's token. Errors: unknown_agent, invalid_agent_kind.
	IssueToken(ctx context.Context, slug string) (string, error)
	// RevokeToken removes the agent's token. Errors: unknown_agent.
	RevokeToken(ctx context.Context, slug string) error
	// DeleteAgent removes an agent without open tasks. Errors: unknown_agent,
	// operator_protected, agent_has_open_tasks.
	DeleteAgent(ctx context.Context, slug string) error
	// RetireAgent revokes the agent's token and retires it: it leaves the
	// agent lists and gets no new tasks, and keeps its name and its tasks.
	// Errors: unknown_agent, invalid_agent_kind.
	RetireAgent(ctx context.Context, slug string) error
	// ReinstateAgent brings a retired agent back with a new token, returned
	// once. Errors: unknown_agent, invalid_request (it is not retired).
	ReinstateAgent(ctx context.Context, slug string) (string, error)
	// Authenticate resolves an agent (cca_) or run (ccr_) token. Errors: unauthorized.
	Authenticate(ctx context.Context, token string) (Principal, error)
	// IssueRunToken mints a run token for one worker run of taskID.
	IssueRunToken(ctx context.Context, slug, taskID string, ttlSeconds int) (string, error)
	// RevokeRunTokens deletes every run token of taskID.
	RevokeRunTokens(ctx context.Context, taskID string) error
}

// RetiredNoToken refuses a token for a retired agent: with one it would
// claim and report while no task can be posted to it. Reinstating it (its
// folder registered again) issues one.
func RetiredNoToken(slug string) error {
	return Errorf(EInvalidRequest, "“%s” was retired (its project was removed or moved to another id): registering its folder again brings it back with a token.", slug).
		WithDetails(map[string]any{"slug": slug, "retired": true})
}

// HasOpenTasks refuses to delete an agent that open tasks (n of them)
// still name, as sender or recipient.
func HasOpenTasks(slug string, n int) error {
	tasks := "open tasks"
	if n == 1 {
		tasks = "open task"
	}
	return Errorf(EAgentHasOpenTasks, "“%s” still has %d %s (on the Tasks page); cancel or finish them first.", slug, n, tasks).
		WithDetails(map[string]any{"openTasks": n})
}

// RetiredNoWorker refuses a worker, or a worker's run, for a retired agent:
// it takes no tasks, so nothing may run for it. Retiring an agent turns its
// worker off; reinstating it leaves the worker off until the operator
// turns it on.
func RetiredNoWorker(slug string) error {
	return Errorf(EInvalidRequest, "“%s” was retired (its project was removed or moved to another id), so it runs no worker: registering its folder again brings it back.", slug).
		WithDetails(map[string]any{"slug": slug, "retired": true})
}

// RetiredBlocker is the blocked report the open tasks of a retired agent
// get, and their senders read.
func RetiredBlocker(slug string) string {
	return fmt.Sprintf("%s was retired (its project removed, or its name moved): nobody will take this task. Cancel it, or post it again to another agent.", slug)
}

// RetiredRecipient refuses a task for a retired agent: it keeps its name
// and its tasks, and gets no new ones.
func RetiredRecipient(slug string) error {
	return Errorf(EUnknownAgent, "“%s” was retired (its project was removed or moved to another id), so it takes no new tasks; registering its folder again brings it back.", slug).
		WithDetails(map[string]any{"slug": slug, "retired": true})
}
