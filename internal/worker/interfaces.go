package worker

import (
	"context"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Relay is what the worker needs of the relay: a subset of relay.Service.
type Relay interface {
	// ClaimNext claims the agent's next task (see relay.TaskService).
	ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error)
	// RenewLease extends the lease of a claimed task.
	RenewLease(ctx context.Context, reporter, taskID string, leaseSeconds int) (relay.Task, error)
	// ReportTask completes or blocks a task.
	ReportTask(ctx context.Context, in relay.ReportInput) (relay.Task, error)
	// ReleaseTask gives a claimed task back to the queue, telling the sender.
	ReleaseTask(ctx context.Context, reporter, taskID, reason string) (relay.Task, error)
	// Task returns any task.
	Task(ctx context.Context, taskID string) (relay.Task, error)
	// IssueRunToken mints the run token of one run.
	IssueRunToken(ctx context.Context, slug, taskID string, ttlSeconds int) (string, error)
	// RevokeRunTokens deletes every run token of a task.
	RevokeRunTokens(ctx context.Context, taskID string) error
	// Heartbeat refreshes the agent's presence.
	Heartbeat(ctx context.Context, slug string) (relay.Agent, error)
	// GetAgent returns an agent.
	GetAgent(ctx context.Context, slug string) (relay.Agent, error)
	// Settings returns the chain limit and the global pause.
	Settings(ctx context.Context) (relay.Settings, error)
	// Subscribe streams committed changes (used to see a cancellation at once).
	Subscribe(buffer int) (<-chan relay.Change, func())
	// Worker returns one worker configuration.
	Worker(ctx context.Context, slug string) (relay.WorkerConfig, error)
	// ListWorkers returns every worker configuration.
	ListWorkers(ctx context.Context) ([]relay.WorkerConfig, error)
	// AppendActivity adds steps to a task's run log.
	AppendActivity(ctx context.Context, taskID string, entries []relay.ActivityEntry) ([]relay.ActivityEntry, error)
	// SaveRunSession remembers the CLI's own session of a task.
	SaveRunSession(ctx context.Context, s relay.RunSession) error
	// RunSession returns the remembered session of a task.
	RunSession(ctx context.Context, taskID string) (relay.RunSession, bool, error)
}

var _ Relay = relay.Service(nil)

// Harness builds agent CLI commands; the app adapts internal/harness to it.
type Harness interface {
	// Build returns the command of one run. It must not have side effects:
	// the worker may call it twice (first without the prompt, to learn the
	// spec's RelayServer for the prompt).
	Build(req runspec.Request) (runspec.Spec, error)
	// Parser returns a fresh parser for a stream format (runspec.Spec.Events).
	Parser(events string) runspec.StreamParser
	// Prompt writes the task prompt.
	Prompt(in runspec.PromptInput) string
	// Name is the harness's display name ("Claude Code"; "harness" for custom).
	Name(id string) string
}

// Tracker lists the files a run adds, changes and deletes in its folders;
// the app passes internal/watch's Tracker.
type Tracker interface {
	// Begin starts tracking dirs before the CLI starts. end, called after
	// it ended, lists the changes; reported are the files the CLI itself
	// said it wrote, for when the tracker alone could not see everything.
	// A tracker that cannot see everything returns what it can: tracking
	// never fails a run. end must be called, and is.
	Begin(ctx context.Context, dirs []string) (end func(ctx context.Context, reported []relay.ChangedFile) []relay.ChangedFile)
}
