package bench

// Report is the outcome of one run. Durations are in milliseconds.
type Report struct {
	Target  Target  `json:"target"`
	Machine Machine `json:"machine"`
	// StartupMs is the time from start to /health 200 (0 when not measured).
	StartupMs float64 `json:"startupMs,omitempty"`
	// Memory is the in-process relay's memory (nil for a remote relay).
	Memory    *Memory         `json:"memory,omitempty"`
	Setup     Setup           `json:"setup"`
	Commits   *CommitResult   `json:"commits,omitempty"`
	Lifecycle LifecycleResult `json:"lifecycle"`
	// Relay is the relay process's own use during the lifecycle phase
	// (only with a Probe); Peer the peer relay's in a mesh run (with its
	// Probe).
	Relay *RelayUsage `json:"relay,omitempty"`
	Peer  *RelayUsage `json:"peer,omitempty"`
	Wake  *WakeResult `json:"wake,omitempty"`
	// Floor is the machine's floor under a wake-up, with no relay (only
	// with Options.FloorDir).
	Floor     *FloorResult   `json:"floor,omitempty"`
	Waiters   *WaitersResult `json:"waiters,omitempty"`
	Queues    []QueueResult  `json:"queues"`
	ElapsedMs float64        `json:"elapsedMs"`
}

// Target says what was measured.
type Target struct {
	URL       string `json:"url"`
	InProcess bool   `json:"inProcess"`
	// PeerURL is the second relay of a mesh run (Options.Peer).
	PeerURL string `json:"peerUrl,omitempty"`
}

// Machine describes where the bench ran.
type Machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"numCPU"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"goVersion"`
}

// Memory is the process's resident memory, in bytes.
type Memory struct {
	// IdleRSS is VmRSS right after start-up, before any load.
	IdleRSS int64 `json:"idleRssBytes"`
	// LoadRSS is VmRSS after the load (bench client included).
	LoadRSS int64 `json:"loadRssBytes"`
	// PeakRSS is VmHWM, the high-water mark of the whole run.
	PeakRSS int64 `json:"peakRssBytes"`
	// IdleAnon and LoadAnon are the anonymous parts (RssAnon: heap, stacks)
	// of IdleRSS and LoadRSS, when the probe reports them; the rest is
	// mostly the executable's own pages.
	IdleAnon int64 `json:"idleAnonBytes,omitempty"`
	LoadAnon int64 `json:"loadAnonBytes,omitempty"`
}

// Setup tells how the bench agents were made.
type Setup struct {
	Prefix string `json:"prefix"`
	Agents int    `json:"agents"`
	// Via is how agents were created and their tokens obtained.
	Via string `json:"via"`
}

// CommitResult is the commit-rate phase: single-row write transactions
// (heartbeat) back to back, in process and over MCP.
type CommitResult struct {
	WindowMs float64 `json:"windowMs"`
	// ServicePerSec is relay.Service.Heartbeat calls per second (0 when the
	// relay is in another process).
	ServicePerSec float64 `json:"servicePerSec,omitempty"`
	Service       Summary `json:"service"`
	// MCPPerSec is heartbeat tool calls per second over HTTP.
	MCPPerSec float64 `json:"mcpPerSec"`
	MCP       Summary `json:"mcp"`
}

// LifecycleResult is the full-lifecycle phase: post_task, claim_next_task,
// report_task progress, report_task completed, read_updates.
type LifecycleResult struct {
	Agents int `json:"agents"`
	Window int `json:"window"`
	// Tasks posted and Completed (the sender read its task-completed event).
	Tasks     int `json:"tasks"`
	Completed int `json:"completed"`
	// EventsRead counts journal events delivered to senders by read_updates
	// (task-claimed, task-progress, task-completed: three per lifecycle).
	EventsRead int     `json:"eventsRead"`
	Ops        int     `json:"ops"`
	Errors     int     `json:"errors"`
	DurationMs float64 `json:"durationMs"`
	// LifecyclesPerSec and OpsPerSec are rates over the phase's duration.
	LifecyclesPerSec float64 `json:"lifecyclesPerSec"`
	OpsPerSec        float64 `json:"opsPerSec"`
	// IdleClaims are claims (waitMs 0) that found the queue empty and were
	// followed by a waiting claim.
	IdleClaims int `json:"idleClaims"`
	// ClaimedAfterWait counts waiting claims that got a task.
	ClaimedAfterWait int `json:"claimedAfterWait"`
	// BenchCPUPerCallMs is the bench's own CPU time per tool call (the load
	// generator, sharing the machine with the relay), when it can be read.
	BenchCPUPerCallMs float64   `json:"benchCpuPerCallMs,omitempty"`
	Tools             []OpStats `json:"tools"`
}

// WakeResult is the wake-up phase: a claim_next_task waiting with waitMs
// 20000, then a post_task to that agent; the latency runs from sending the
// post to receiving the claim's answer.
type WakeResult struct {
	Samples int     `json:"samples"`
	Latency Summary `json:"latency"`
	// Post is the latency of the post_task calls themselves.
	Post Summary `json:"post"`
}

// QueueResult is claim latency with Size tasks queued for one recipient.
type QueueResult struct {
	Size int `json:"size"`
	// SeedVia is how the queue was filled.
	SeedVia       string  `json:"seedVia"`
	SeedMs        float64 `json:"seedMs"`
	SeedPerSec    float64 `json:"seedPerSec"`
	Claim         Summary `json:"claim"`
	Release       Summary `json:"release"`
	QueuedAtStart int     `json:"queuedAtStart"`
}
