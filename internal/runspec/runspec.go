// Package runspec is the contract between the worker and the agent CLI
// presets: what a harness needs to build one run's command (Request), the
// command it builds (Spec), the prompt's inputs and the parser of the CLI's
// output; and what the worker asks of the sandbox (SandboxRequest,
// Sandboxed). The worker, internal/harness and internal/sandbox may not
// import each other, so they import this package; it imports only the
// domain and the standard library.
package runspec

import (
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Request is what a harness needs to build the command of one worker run.
type Request struct {
	Config relay.WorkerConfig
	// RunDir is the run's private folder; the paths below are inside it.
	RunDir        string
	PromptFile    string
	ResultFile    string
	MCPConfigFile string
	// Server is this run's name for its own MCP server where the preset
	// needs one a working folder cannot guess (RunServer-<random>, drawn
	// once per run by the worker); "" means RunServer.
	Server string
	// MCPURL is the relay's MCP endpoint for this computer.
	MCPURL string
	// Prompt is the task prompt (see PromptInput).
	Prompt string
	// ExtraDirs are the configured extra folders that exist.
	ExtraDirs []string
	// ResumeSession is the CLI's own session to resume, "" for a fresh one.
	ResumeSession string
}

// RunServer is the MCP server name of the relay's tools in a run's own MCP
// configuration (the worker's mcp.json, a preset's settings file). Where a
// working folder's own settings could replace a server of a known name
// (Gemini's project settings outrank the user's), the run's server is
// named RunServer, a dash and a random suffix instead (Request.Server).
const RunServer = "crosschat-run"

// Stream formats of agent CLIs' output.
const (
	EventsPlain        = "plain"
	EventsClaudeStream = "claude-stream"
	EventsCodexJSON    = "codex-json"
	EventsGeminiStream = "gemini-stream"
)

// Spec is a command ready to start. It never carries the run token in
// Args or Files: the token reaches the CLI only through the worker's
// environment (CROSSCHAT_TOKEN) or the MCP config file the worker writes.
type Spec struct {
	Program string
	Args    []string
	// Stdin is written to the CLI's standard input, which is then closed.
	Stdin string
	// Env holds preset-specific variables added to the minimal environment.
	Env map[string]string
	// ResultFile, when set, is where the CLI writes its final answer.
	ResultFile string
	// Files are written into the run dir before the start (name → content).
	Files map[string]string
	// Events is the output format: EventsPlain, EventsClaudeStream, …
	Events string
	// RelayServer is the MCP server name under which the run sees the
	// relay's tools, "" when the CLI gets none.
	RelayServer string
	// ConfinedArgs, when set, replace Args when (and only when) the run is
	// actually confined by the worker's sandbox: a CLI whose own sandbox
	// cannot start inside it (Codex) leaves its own off there, and keeps
	// it on whenever the run goes unconfined.
	ConfinedArgs []string
	// Notes are warnings the worker puts in the run log once, when the CLI
	// starts (an agent CLI version outside the tested range); the run goes
	// ahead.
	Notes []string
}

// StreamParser turns an agent CLI's output, line by line, into activity steps.
type StreamParser interface {
	// Line parses one line of standard output.
	Line(line string) []relay.ActivityEntry
	// Answer is the final answer found in the stream, "" if none.
	Answer() string
	// Failure is the CLI's own error the stream reported instead of an
	// answer (not logged in, a quota, an API error, a turn it gave up on),
	// "" if none: whatever Answer holds then is not an answer.
	Failure() string
	// SessionID is the CLI's own session id, for resuming; "" if unknown.
	SessionID() string
}

// PromptInput is everything a task prompt is built from.
type PromptInput struct {
	Task   relay.Task
	Agent  relay.Agent
	Sender relay.Agent
	// ParentTitle is the title of the task this one is part of, if any.
	ParentTitle string
	// HandOffsLeft is the chain limit minus the task's depth.
	HandOffsLeft int
	// ExtraDirs are the folders the run may use besides the working folder.
	ExtraDirs []string
	// RelayServer is the MCP server name of the relay's tools in this run, "" for none.
	RelayServer string
	// Resumed tells that the CLI resumes its own earlier session of this task.
	Resumed bool
	// RequestToken, when set, is the token of a delivery into a session a
	// worker is bound to: the answer should echo it, so the worker can pair
	// answer and request.
	RequestToken string
}

// SandboxRequest is what confining one run's CLI needs (see
// internal/sandbox): the command the worker would start and the run's
// folders.
type SandboxRequest struct {
	Config relay.WorkerConfig
	// Program is the CLI's absolute path; Args its arguments (not argv[0]).
	Program string
	Args    []string
	// ConfinedArgs, when set, are the arguments to use instead of Args
	// only where the run is actually confined (Spec.ConfinedArgs).
	ConfinedArgs []string
	// Env is the CLI's environment ("NAME=value"): HOME, PATH and the CLIs'
	// configuration roots decide some of the allowed paths.
	Env []string
	// Workdir and ExtraDirs are the run's read-write folders. RunDir, its
	// run folder, is read-only to the run but for Outputs (files in it the
	// run writes, made empty when missing), its temporary folder and its
	// CLI home.
	Workdir   string
	ExtraDirs []string
	RunDir    string
	Outputs   []string
	// Resolved, when set, says the worker resolved the run's folders and
	// checked where they lead: Workdir and ExtraDirs are given as they
	// resolved, and Resolved maps each allowed path (as configured,
	// cleaned) to where it led. The sandbox gives the run those very
	// paths and follows no link in them again, so a link put in place of
	// one since the check (by a process of another run that may write
	// there) stops the run rather than moving its rules.
	Resolved map[string]string
	// KillGrace is the worker's grace of a stopped run between SIGTERM and
	// SIGKILL (0: the sandbox's default).
	KillGrace time.Duration
	// Server is the run's own MCP server name (Request.Server), which a
	// copy of the CLI's settings the sandbox gives the run may have to name.
	Server string
}

// Sandboxed is a run's command wrapped in the sandbox.
type Sandboxed struct {
	// Program and Args start the confined CLI (Args without argv[0]).
	Program string
	Args    []string
	// Confined is false when the run goes ahead without the sandbox.
	Confined bool
	// Log is the run log's line that says how the run is confined (or, with
	// Warning, why it is not).
	Log     string
	Detail  string
	Warning bool
}
