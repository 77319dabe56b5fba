// Package worker runs agent CLIs headless for the tasks sent to their
// agents: one loop per enabled worker claims the agent's next task from the
// allowed senders (claimedVia worker), runs the CLI in the working folder
// with a short-lived run token, keeps the lease alive, records the run's
// activity and changed files, enforces the time and runs-per-hour limits,
// kills the whole process tree on cancel or timeout, and reports the answer
// or a blocker itself.
//
// The package talks to the relay only through the Relay interface and to
// the CLI presets only through Harness; the app wires both.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"sync"
	"time"

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

// Defaults for Options.
const (
	DefaultRenewEvery       = 5 * time.Minute
	DefaultCancelCheckEvery = 10 * time.Second
	DefaultKillGrace        = 5 * time.Second
	DefaultPoll             = 5 * time.Second
	DefaultErrorBackoff     = 15 * time.Second
	DefaultFlushEvery       = 750 * time.Millisecond
	// LeaseSeconds is the lease a worker claims and renews.
	LeaseSeconds = relay.DefaultLeaseSeconds
	// heartbeatEvery keeps a listening agent online (relay.OnlineWindow is 2 min).
	heartbeatEvery = time.Minute
)

// Options configure a Manager. Relay, Harness and RunRoot are required.
type Options struct {
	Relay   Relay
	Harness Harness
	// RunRoot holds one private folder per running task (<data-dir>/runs).
	RunRoot string
	// MCPURL is the relay's MCP endpoint the runs talk to.
	MCPURL string
	// Tracker lists each run's changed files; nil records none.
	Tracker Tracker
	// Sessions reads the agent CLIs' own sessions, for workers bound to
	// one; nil refuses such workers' runs.
	Sessions Sessions
	// Sandbox wraps the command of a run whose worker has the sandbox on
	// (relay.WorkerConfig.SandboxOn); the app passes internal/sandbox's
	// Wrapper. nil runs every CLI unconfined (tests of the worker alone).
	Sandbox func(runspec.SandboxRequest) (runspec.Sandboxed, error)
	// Logger receives loop-level errors; default discards.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Env returns the relay's environment; default os.Environ. The CLI gets
	// only part of it (see ChildEnv).
	Env func() []string
	// Secrets (the admin token) are hidden, with the run's own token and
	// anything shaped like an agent token, from every run's activity,
	// answer and report.
	Secrets []string
	// OnStatus is called with a worker's status whenever it changes (the
	// app publishes it as a relay.Change of type "worker").
	OnStatus func(relay.WorkerStatus)
	// RenewEvery is how often a running task's lease is renewed (5 min).
	RenewEvery time.Duration
	// CancelCheckEvery is how often a running task is checked for
	// cancellation besides the change stream (10 s).
	CancelCheckEvery time.Duration
	// KillGrace is how long a killed tree gets between SIGTERM and SIGKILL (5 s).
	KillGrace time.Duration
	// Poll is how long one claim waits for a task (5 s).
	Poll time.Duration
	// ErrorBackoff is the pause after a failed claim (15 s).
	ErrorBackoff time.Duration
	// FlushEvery is how often run activity is written (750 ms).
	FlushEvery time.Duration
	// MinuteLength is the length of a worker's timeout minute; tests shrink
	// it. Default time.Minute.
	MinuteLength time.Duration
}

// Manager runs one loop per enabled worker.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	workers map[string]*worker
	paused  bool
	wake    chan struct{} // closed and replaced when the pause changes
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
	stopped bool
}

// NewManager returns a stopped Manager.
func NewManager(opts Options) (*Manager, error) {
	if opts.Relay == nil || opts.Harness == nil || opts.RunRoot == "" {
		return nil, errors.New("worker: Relay, Harness and RunRoot are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Env == nil {
		opts.Env = os.Environ
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.RenewEvery, DefaultRenewEvery)
	def(&opts.CancelCheckEvery, DefaultCancelCheckEvery)
	def(&opts.KillGrace, DefaultKillGrace)
	def(&opts.Poll, DefaultPoll)
	def(&opts.ErrorBackoff, DefaultErrorBackoff)
	def(&opts.FlushEvery, DefaultFlushEvery)
	def(&opts.MinuteLength, time.Minute)
	return &Manager{
		opts:    opts,
		log:     opts.Logger,
		workers: make(map[string]*worker),
		wake:    make(chan struct{}),
	}, nil
}

// Start recovers runs a previous relay process left behind (see Recover),
// reads the global pause, then starts one loop per enabled worker. The
// loops run until Stop; ctx only bounds the start itself.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("worker: manager already started")
	}
	m.started = true
	m.ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m.mu.Unlock()

	if err := m.Recover(ctx); err != nil {
		m.log.Error("worker: recovering interrupted runs", "err", err)
	}
	settings, err := m.opts.Relay.Settings(ctx)
	if err != nil {
		return fmt.Errorf("worker: read settings: %w", err)
	}
	configs, err := m.opts.Relay.ListWorkers(ctx)
	if err != nil {
		return fmt.Errorf("worker: list workers: %w", err)
	}
	m.mu.Lock()
	m.paused = settings.WorkersPaused
	var publish []*worker
	for _, c := range configs {
		w := &worker{m: m, cfg: c}
		m.workers[c.AgentSlug] = w
		if c.Enabled {
			m.startLoopLocked(w, nil)
		}
		publish = append(publish, w)
	}
	m.mu.Unlock()
	for _, w := range publish {
		w.publish()
	}
	return nil
}

// startLoopLocked starts a loop for w that begins once prev (the loop it
// replaces, possibly still finishing a run) has ended. m.mu is held.
func (m *Manager) startLoopLocked(w *worker, prev *loopHandle) {
	ctx, cancel := context.WithCancel(m.ctx)
	h := &loopHandle{cancel: cancel, done: make(chan struct{})}
	w.loop = h
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(h.done)
		if prev != nil {
			select {
			case <-prev.done:
			case <-ctx.Done():
				// Replaced in turn: the loop after this one waits for
				// this one's end, so this one waits for prev's, and no
				// two loops of a worker ever overlap.
				<-prev.done
				return
			}
		}
		w.runLoop(ctx, &h.claiming)
	}()
}

// Reload applies a worker's saved configuration: call it after the worker
// was saved or deleted. The loop stops claiming and a new one starts with
// the new configuration. A run in progress finishes with the configuration
// it started with; a deleted or disabled worker takes no further tasks.
func (m *Manager) Reload(ctx context.Context, slug string) error {
	cfg, err := m.opts.Relay.Worker(ctx, slug)
	deleted := relay.ErrorCode(err) == relay.EUnknownWorker
	if err != nil && !deleted {
		return fmt.Errorf("worker: reload %s: %w", slug, err)
	}
	m.mu.Lock()
	if !m.started || m.stopped {
		m.mu.Unlock()
		return errors.New("worker: manager is not running")
	}
	w := m.workers[slug]
	var prev *loopHandle
	if w != nil && w.loop != nil {
		prev = w.loop
		prev.cancel()
		w.loop = nil
		// Before Reload returns (and after m.mu is released, so a slow
		// give-back stalls nobody else), the cancelled loop has stopped
		// claiming.
		defer prev.claimed()
	}
	if deleted {
		if w != nil {
			w.mu.Lock()
			w.deleted = true
			running := w.current != nil
			w.mu.Unlock()
			if !running {
				delete(m.workers, slug)
			}
		}
		m.mu.Unlock()
		return nil
	}
	if w == nil || w.isDeleted() {
		w = &worker{m: m}
		m.workers[slug] = w
	}
	w.mu.Lock()
	w.cfg = cfg
	w.errMsg = ""
	w.mu.Unlock()
	if cfg.Enabled {
		m.startLoopLocked(w, prev)
	}
	m.mu.Unlock()
	w.publish()
	return nil
}

// SetPaused pauses or resumes every worker (call it after the settings
// changed). Pausing stops new claims; a CLI already running goes on until it
// finishes.
func (m *Manager) SetPaused(paused bool) {
	m.mu.Lock()
	if m.paused == paused {
		m.mu.Unlock()
		return
	}
	m.paused = paused
	close(m.wake)
	m.wake = make(chan struct{})
	ws := m.listLocked()
	var loops []*loopHandle
	for _, w := range ws {
		if paused && w.loop != nil {
			loops = append(loops, w.loop)
		}
	}
	m.mu.Unlock()
	// Once a pause returns, no loop is claiming: a task handed to a claim
	// the pause ended is back in the queue.
	for _, h := range loops {
		h.claimed()
	}
	for _, w := range ws {
		w.publish()
	}
}

func (m *Manager) isPaused() (bool, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused, m.wake
}

func (m *Manager) listLocked() []*worker {
	ws := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		ws = append(ws, w)
	}
	return ws
}

// Statuses returns every worker's status, by agent slug.
func (m *Manager) Statuses() []relay.WorkerStatus {
	m.mu.Lock()
	ws := m.listLocked()
	m.mu.Unlock()
	out := make([]relay.WorkerStatus, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentSlug < out[j].AgentSlug })
	return out
}

// Status returns one worker's status; ok is false when it has none.
func (m *Manager) Status(slug string) (relay.WorkerStatus, bool) {
	m.mu.Lock()
	w := m.workers[slug]
	m.mu.Unlock()
	if w == nil {
		return relay.WorkerStatus{}, false
	}
	return w.status(), true
}

// Stop ends every loop, kills the running CLIs' process trees, puts their
// tasks back in the queue and waits for all of it, or until ctx ends; then
// it releases the tasks of the runs still going itself.
func (m *Manager) Stop(ctx context.Context) error {
	m.mu.Lock()
	if !m.started || m.stopped {
		m.mu.Unlock()
		return nil
	}
	m.stopped = true
	m.cancel()
	m.mu.Unlock()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// A run did not end in time: put its task back in the queue now,
		// while the store is still open, instead of leaving it claimed
		// until its lease runs out.
		return errors.Join(fmt.Errorf("worker: stop: %w", ctx.Err()), m.releaseRunning())
	}
}

// releaseRunning gives the task of every run still going back to the queue.
func (m *Manager) releaseRunning() error {
	m.mu.Lock()
	ws := m.listLocked()
	m.mu.Unlock()
	var errs []error
	for _, w := range ws {
		w.mu.Lock()
		slug, cur := w.cfg.AgentSlug, w.current
		w.mu.Unlock()
		if cur == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := m.opts.Relay.ReleaseTask(ctx, slug, cur.ID, shutdownReason)
		cancel()
		if err != nil && relay.ErrorCode(err) != relay.ETaskUpdateDenied {
			errs = append(errs, fmt.Errorf("worker: release task %s of %s: %w", cur.ID, slug, err))
		}
	}
	return errors.Join(errs...)
}

// loopHandle is one generation of a worker's loop.
type loopHandle struct {
	cancel context.CancelFunc
	done   chan struct{}
	// claiming is held while the loop claims: once the loop is cancelled
	// and claimed has returned, no claim of this loop is waiting any more
	// (a post can no longer hand it a task), and a task it was handed is
	// back in the queue.
	claiming sync.Mutex
}

// claimed waits until the loop, once cancelled, has stopped claiming.
func (h *loopHandle) claimed() {
	h.claiming.Lock()
	defer h.claiming.Unlock()
}

// worker is one agent's worker: its configuration and live state.
type worker struct {
	m *Manager

	// loop is guarded by m.mu.
	loop *loopHandle

	pubMu sync.Mutex // serializes publish

	mu          sync.Mutex
	cfg         relay.WorkerConfig
	current     *relay.RunningTask
	last        *relay.LastRun
	errMsg      string
	resumesAt   time.Time
	starts      []time.Time // run starts in the last hour
	deleted     bool
	lastPublish *relay.WorkerStatus
}

func (w *worker) isDeleted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deleted
}

func (w *worker) config() relay.WorkerConfig {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfg
}

// status computes the state by precedence: disabled > running > paused >
// limited > error > idle.
func (w *worker) status() relay.WorkerStatus {
	paused, _ := w.m.isPaused()
	now := w.m.opts.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := relay.WorkerStatus{WorkerConfig: w.cfg}
	if w.current != nil {
		c := *w.current
		s.CurrentTask = &c
	}
	if w.last != nil {
		l := *w.last
		s.LastRun = &l
	}
	limited := !w.resumesAt.IsZero() && w.resumesAt.After(now)
	switch {
	case !w.cfg.Enabled || w.deleted:
		s.State = relay.WorkerDisabled
	case w.current != nil:
		s.State = relay.WorkerRunning
	case paused:
		s.State = relay.WorkerPaused
	case limited:
		s.State = relay.WorkerLimited
	case w.errMsg != "":
		s.State = relay.WorkerError
		s.Error = w.errMsg
	default:
		s.State = relay.WorkerIdle
	}
	if limited {
		s.ResumesAt = relay.FormatTime(w.resumesAt)
	}
	return s
}

// publish tells OnStatus the status if it changed since the last call.
func (w *worker) publish() {
	if w.m.opts.OnStatus == nil {
		return
	}
	// One publisher at a time, so a stale status never follows a fresh one.
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	s := w.status()
	w.mu.Lock()
	same := w.lastPublish != nil && reflect.DeepEqual(*w.lastPublish, s)
	if !same {
		w.lastPublish = &s
	}
	w.mu.Unlock()
	if !same {
		w.m.opts.OnStatus(s)
	}
}

func (w *worker) update(fn func(w *worker)) {
	w.mu.Lock()
	fn(w)
	w.mu.Unlock()
	w.publish()
}
