package relay

import (
	"context"
	"regexp"
	"strings"
)

// EnvNamePattern is what a name in WorkerConfig.Env must match.
const EnvNamePattern = `^[A-Za-z_][A-Za-z0-9_]*$`

var envName = regexp.MustCompile(EnvNamePattern)

// PromptMode tells how a run's prompt reaches the agent CLI.
type PromptMode string

// Prompt delivery modes.
const (
	PromptStdin    PromptMode = "stdin"
	PromptFile     PromptMode = "file"
	PromptArgument PromptMode = "argument"
)

// Worker defaults and limits.
const (
	DefaultWorkerTimeoutMinutes = 30
	MaxWorkerTimeoutMinutes     = 1440
	DefaultRunsPerHour          = 20
	MaxRunsPerHour              = 500
	MaxWorkerArgs               = 64
	MaxWorkerExtraDirs          = 20
	MaxWorkerSenders            = 100
	MaxWorkerEnv                = 50
	// HarnessCustom is the harness id of "other command-line agent".
	HarnessCustom = "custom"
	// MaxSessionRef bounds a session id or name a worker is bound to.
	MaxSessionRef = 300
	// SessionClaudeCode and SessionCodex are the harnesses whose workers
	// can be bound to an existing session (claude --resume, codex exec resume).
	SessionClaudeCode = "claude-code"
	SessionCodex      = "codex"
)

// WorkerConfig makes an agent run its tasks unattended: the agent CLI
// (a harness preset or a custom program) runs headless in Workdir for each
// task from AllowedSenders.
type WorkerConfig struct {
	AgentSlug string `json:"agentSlug"`
	// Harness is a preset id (claude-code, codex, gemini, …) or "custom".
	Harness string `json:"harness"`
	// Command is the program's absolute path.
	Command string `json:"command"`
	// Args is the custom program's argument template ({prompt_file},
	// {result_file}, {mcp_config}, {mcp_url}, {workdir}); presets ignore it.
	Args       []string   `json:"args"`
	PromptMode PromptMode `json:"promptMode"`
	Workdir    string     `json:"workdir"`
	ExtraDirs  []string   `json:"extraDirs"`
	// AllowedSenders are the slugs whose tasks the worker takes.
	AllowedSenders []string `json:"allowedSenders"`
	TimeoutMinutes int      `json:"timeoutMinutes"`
	RunsPerHour    int      `json:"runsPerHour"`
	// Exclusive ("only this worker"): chat sessions of the agent get no tasks.
	Exclusive bool `json:"exclusive"`
	Enabled   bool `json:"enabled"`
	// Env names extra variables of the relay's environment passed to the CLI.
	Env []string `json:"env"`
	// Session binds the worker to an existing Claude Code session or Codex
	// thread, by id or exact name as a person gave it; "" runs each task
	// fresh. Saving resolves it to SessionID (and SessionLabel) on this
	// computer; each task is then delivered into that session by resuming it.
	Session string `json:"session,omitempty"`
	// SessionID is the resolved session id (set on save, not by the caller).
	SessionID string `json:"sessionId,omitempty"`
	// SessionLabel is the session's name or generated title when it was bound.
	SessionLabel string `json:"sessionLabel,omitempty"`
	// AnySession lets a Claude Code or Codex worker resume any session of
	// its CLI on this computer that a task names (targetSession, by id or
	// exact name) and that ran in its working or extra folders; tasks that
	// name none run fresh. Not with Session.
	AnySession bool `json:"anySession,omitempty"`
	// Sandbox confines each run to its folders (internal/sandbox): "on",
	// "off", or "" for the preset's default (on for Claude Code, Codex and
	// Gemini CLI, off for the others; see SandboxOn).
	Sandbox string `json:"sandbox"`
	// AllowPaths are extra paths a sandboxed run may use: "PATH" read-only,
	// "PATH:rw" read-write.
	AllowPaths []string `json:"allowPaths"`
	// AllowUnsandboxed lets a run go ahead without the sandbox (with a
	// warning in its log) where the system cannot confine it; otherwise
	// such a run is blocked.
	AllowUnsandboxed bool `json:"allowUnsandboxed"`
	// AllowHookEdits lets a sandboxed run change, in the folders it may
	// write, what other programs run code from later: a repository's git
	// configuration and hooks, the agent CLIs' project settings (.claude,
	// .mcp.json, .codex, .gemini, .agents). Off, a run's changes to them
	// are undone after it (and reported): for a repository whose hooks a
	// run must edit.
	AllowHookEdits bool `json:"allowHookEdits,omitempty"`
	// Pinned maps each of PinnedPaths, as configured, to where it led
	// (every symbolic link followed) when the worker was saved: set on
	// save, not by the caller. A run whose path leads elsewhere now (a
	// link put in its place, which a run that may write there can do) is
	// refused; saving again accepts where it leads.
	Pinned    map[string]string `json:"pinned,omitempty"`
	CreatedAt string            `json:"createdAt,omitempty"`
	UpdatedAt string            `json:"updatedAt,omitempty"`
}

// WorkerState is what a worker is doing.
type WorkerState string

// Worker states, in precedence order.
const (
	WorkerDisabled WorkerState = "disabled"
	WorkerRunning  WorkerState = "running"
	WorkerPaused   WorkerState = "paused"
	WorkerLimited  WorkerState = "limited"
	WorkerError    WorkerState = "error"
	WorkerIdle     WorkerState = "idle"
)

// RunningTask is the task a worker is running.
type RunningTask struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	StartedAt string `json:"startedAt"`
}

// LastRun summarizes a worker's latest finished run.
type LastRun struct {
	TaskID     string `json:"taskId"`
	Title      string `json:"title"`
	Outcome    string `json:"outcome"` // completed, blocked or cancelled
	FinishedAt string `json:"finishedAt"`
	Summary    string `json:"summary"`
	// Refused are the paths the worker's sandbox refused the run, as the
	// CLI reported them (the worker form offers to allow them).
	Refused []string `json:"refused,omitempty"`
	// Undone are what the run changed that runs may not (git
	// configuration and hooks, the agent CLIs' project settings), each
	// with what undoing it did.
	Undone []string `json:"undone,omitempty"`
}

// WorkerStatus is a worker's configuration and live state.
type WorkerStatus struct {
	WorkerConfig
	State       WorkerState  `json:"state"`
	ResumesAt   string       `json:"resumesAt,omitempty"`
	CurrentTask *RunningTask `json:"currentTask,omitempty"`
	LastRun     *LastRun     `json:"lastRun,omitempty"`
	Error       string       `json:"error,omitempty"`
}

// Activity entry kinds (the live run view's steps).
const (
	StepStart    = "start"
	StepMessage  = "message"
	StepThinking = "thinking"
	StepPlan     = "plan"
	StepCommand  = "command"
	StepTool     = "tool"
	StepFile     = "file"
	StepFiles    = "files"
	StepOutput   = "output"
	StepError    = "error"
	// StepWarning is a notice shown as a banner in the run view (a session
	// idle for a long time, a missing request token).
	StepWarning = "warning"
	// StepSandbox says how the run is confined: the paths it may reach.
	StepSandbox = "sandbox"
	StepEnd     = "end"
)

// Step states.
const (
	StepRunning = "running"
	StepOK      = "ok"
	StepFailed  = "failed"
)

// File changes.
const (
	FileAdded   = "added"
	FileChanged = "changed"
	FileDeleted = "deleted"
)

// ChangedFile is a file a run added, changed or deleted.
type ChangedFile struct {
	// Path is absolute.
	Path   string `json:"path"`
	Change string `json:"change"`
	Size   int64  `json:"size,omitempty"`
}

// ActivityEntry is one step of a worker run, shown live on the task page.
type ActivityEntry struct {
	// Seq numbers entries per task from 1; the store assigns it.
	Seq    int    `json:"seq"`
	At     string `json:"at"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Detail string `json:"detail,omitempty"`
	Status string `json:"status,omitempty"`
	// Ref ties updates of the same step together (a later entry with the
	// same ref replaces the earlier one in the view).
	Ref   string        `json:"ref,omitempty"`
	Files []ChangedFile `json:"files,omitempty"`
}

// RunSession remembers the agent CLI's own session of a task's latest run,
// so a later round (after request_changes) resumes it.
type RunSession struct {
	TaskID    string `json:"taskId"`
	Harness   string `json:"harness"`
	SessionID string `json:"sessionId"`
	Workdir   string `json:"workdir"`
	// RequestToken is the request token of a turn delivered into a session,
	// recorded before the CLI starts and cleared when the run ends: a run
	// interrupted by a restart is recovered from the transcript with it.
	RequestToken string `json:"requestToken,omitempty"`
	// ClaimedAt is the claim of the run that recorded RequestToken: a token
	// left by an earlier round of the task is not this claim's.
	ClaimedAt string `json:"claimedAt,omitempty"`
}

// WorkerService stores worker configurations, run activity and CLI sessions.
type WorkerService interface {
	// SaveWorker creates or replaces the worker of an agent (keeping
	// CreatedAt). Errors: unknown_agent, invalid_agent_kind, invalid_request.
	SaveWorker(ctx context.Context, c WorkerConfig) (WorkerConfig, error)
	// Worker returns one worker. Errors: unknown_worker.
	Worker(ctx context.Context, slug string) (WorkerConfig, error)
	// ListWorkers returns every worker by agent slug.
	ListWorkers(ctx context.Context) ([]WorkerConfig, error)
	// DeleteWorker removes a worker; removing a missing one is harmless.
	DeleteWorker(ctx context.Context, slug string) error
	// WorkerOnly reports whether the agent's tasks go only to its enabled,
	// exclusive worker, so chat claims get none.
	WorkerOnly(ctx context.Context, slug string) (bool, error)
	// AppendActivity adds entries to a task's run log, numbering them, and
	// publishes an activity change. Errors: unknown_task.
	AppendActivity(ctx context.Context, taskID string, entries []ActivityEntry) ([]ActivityEntry, error)
	// Activity returns a task's run log in order. Errors: unknown_task.
	Activity(ctx context.Context, taskID string) ([]ActivityEntry, error)
	// TaskChangedFile reports whether a run of the task recorded path as changed.
	TaskChangedFile(ctx context.Context, taskID, path string) (bool, error)
	// SaveRunSession remembers the CLI session of a task's run.
	SaveRunSession(ctx context.Context, s RunSession) error
	// RunSession returns the remembered session; ok is false when there is none.
	RunSession(ctx context.Context, taskID string) (RunSession, bool, error)
}

// EUnknownWorker means the agent has no worker.
const EUnknownWorker = "unknown_worker"

// ChangeActivity carries new activity entries of a task (Change.TaskID, Change.Entries).
const ChangeActivity = "activity"

// ChangeWorker carries a worker's status (Change.Worker).
const ChangeWorker = "worker"

// Validate checks and normalizes a worker configuration (filesystem checks
// are the worker's). AllowedSenders may be empty only when the worker is
// disabled (the upstream relay refused that even when disabled).
func (c WorkerConfig) Validate() (WorkerConfig, error) {
	var v checker
	v.slug("agentSlug", &c.AgentSlug)
	v.text("harness", &c.Harness, 1, MaxCapability)
	if v.text("command", &c.Command, 0, 1000); v.err != nil {
		return c, v.err
	}
	if len(c.Args) > MaxWorkerArgs {
		return c, Errorf(EInvalidRequest, "args: at most %d.", MaxWorkerArgs)
	}
	for i, a := range c.Args {
		if len(a) > 2000 {
			return c, Errorf(EInvalidRequest, "args[%d]: at most 2000 characters.", i)
		}
	}
	switch c.PromptMode {
	case "":
		c.PromptMode = PromptStdin
	case PromptStdin, PromptFile, PromptArgument:
	default:
		return c, Errorf(EInvalidRequest, "promptMode: must be stdin, file or argument.")
	}
	if v.text("workdir", &c.Workdir, 1, 1000); v.err != nil {
		return c, v.err
	}
	if len(c.ExtraDirs) > MaxWorkerExtraDirs {
		return c, Errorf(EInvalidRequest, "extraDirs: at most %d.", MaxWorkerExtraDirs)
	}
	if len(c.AllowedSenders) > MaxWorkerSenders {
		return c, Errorf(EInvalidRequest, "allowedSenders: at most %d.", MaxWorkerSenders)
	}
	senders := make([]string, 0, len(c.AllowedSenders))
	seen := map[string]bool{}
	for _, s := range c.AllowedSenders {
		n, err := NormalizeSlug("allowedSenders", s)
		if err != nil {
			return c, err
		}
		if !seen[n] {
			seen[n] = true
			senders = append(senders, n)
		}
	}
	c.AllowedSenders = senders
	if c.Enabled && len(senders) == 0 {
		return c, Errorf(EInvalidRequest, "allowedSenders: name at least one sender whose tasks this worker takes, or turn the worker off.")
	}
	if c.TimeoutMinutes == 0 {
		c.TimeoutMinutes = DefaultWorkerTimeoutMinutes
	}
	if c.TimeoutMinutes < 1 || c.TimeoutMinutes > MaxWorkerTimeoutMinutes {
		return c, Errorf(EInvalidRequest, "timeoutMinutes: must be 1..%d.", MaxWorkerTimeoutMinutes)
	}
	if c.RunsPerHour == 0 {
		c.RunsPerHour = DefaultRunsPerHour
	}
	if c.RunsPerHour < 1 || c.RunsPerHour > MaxRunsPerHour {
		return c, Errorf(EInvalidRequest, "runsPerHour: must be 1..%d.", MaxRunsPerHour)
	}
	if len(c.Env) > MaxWorkerEnv {
		return c, Errorf(EInvalidRequest, "env: at most %d names.", MaxWorkerEnv)
	}
	for _, name := range c.Env {
		if !envName.MatchString(name) {
			return c, Errorf(EInvalidRequest, "env: %q is not a variable name.", name)
		}
	}
	if v.text("session", &c.Session, 0, MaxSessionRef); v.err != nil {
		return c, v.err
	}
	if c.Session == "" {
		c.SessionID, c.SessionLabel = "", ""
	} else if c.Harness != SessionClaudeCode && c.Harness != SessionCodex {
		return c, Errorf(EInvalidRequest, "session: only Claude Code and Codex workers can be bound to a session.")
	}
	if c.AnySession && (c.Session != "" || (c.Harness != SessionClaudeCode && c.Harness != SessionCodex)) {
		return c, Errorf(EInvalidRequest, "anySession: only a Claude Code or Codex worker without a bound session can resume any session.")
	}
	v.text("sessionId", &c.SessionID, 0, MaxSessionRef)
	if v.text("sessionLabel", &c.SessionLabel, 0, 2*MaxSessionRef); v.err != nil {
		return c, v.err
	}
	switch c.Sandbox {
	case "", SandboxOn, SandboxOff:
	default:
		return c, Errorf(EInvalidRequest, "sandbox: must be on, off or empty (the preset's default).")
	}
	if len(c.AllowPaths) > MaxWorkerAllowPaths {
		return c, Errorf(EInvalidRequest, "allowPaths: at most %d.", MaxWorkerAllowPaths)
	}
	for i, p := range c.AllowPaths {
		path, _ := CutAllowPath(p)
		if len(p) > 1000 || path == "" || !absPath(path) {
			return c, Errorf(EInvalidRequest, "allowPaths[%d]: must be an absolute path, with :rw for read-write.", i)
		}
	}
	if c.AllowPaths == nil {
		c.AllowPaths = []string{}
	}
	// Pins only of the paths the worker has (a path it no longer has
	// leaves its pin behind).
	if len(c.Pinned) > 0 {
		keep := make(map[string]string, len(c.Pinned))
		for _, p := range c.PinnedPaths() {
			if v, ok := c.Pinned[p]; ok && len(v) <= 4096 {
				keep[p] = v
			}
		}
		c.Pinned = keep
	}
	if c.Args == nil {
		c.Args = []string{}
	}
	if c.ExtraDirs == nil {
		c.ExtraDirs = []string{}
	}
	if c.Env == nil {
		c.Env = []string{}
	}
	return c, nil
}

// Sandbox settings of a worker (WorkerConfig.Sandbox).
const (
	SandboxOn  = "on"
	SandboxOff = "off"
	// MaxWorkerAllowPaths bounds WorkerConfig.AllowPaths.
	MaxWorkerAllowPaths = 32
)

// sandboxedPresets are the presets whose runs are sandboxed by default: the
// CLIs whose needs CI proves in the sandbox.
var sandboxedPresets = []string{"claude-code", "codex", "gemini"}

// SandboxOn reports whether the worker's runs are sandboxed: as set, or
// by the preset's default when Sandbox is "".
func (c WorkerConfig) SandboxOn() bool {
	switch c.Sandbox {
	case SandboxOn:
		return true
	case SandboxOff:
		return false
	}
	for _, p := range sandboxedPresets {
		if c.Harness == p {
			return true
		}
	}
	return false
}

// CutAllowPath splits an allowed path ("PATH" or "PATH:rw") into the path
// and whether it is read-write.
func CutAllowPath(s string) (path string, rw bool) {
	if p, ok := strings.CutSuffix(s, ":rw"); ok {
		return p, true
	}
	if p, ok := strings.CutSuffix(s, ":ro"); ok {
		return p, false
	}
	return s, false
}

// absPath reports whether p is absolute on Unix (/…) or Windows (C:\…, \\…).
func absPath(p string) bool {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\\`) {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// PinnedPaths are the paths of the worker that are pinned when it is saved
// (see Pinned), as configured: the working folder, the extra folders and
// the allowed paths (without ":rw").
func (c WorkerConfig) PinnedPaths() []string {
	out := append([]string{c.Workdir}, c.ExtraDirs...)
	for _, a := range c.AllowPaths {
		p, _ := CutAllowPath(a)
		out = append(out, p)
	}
	return out
}
