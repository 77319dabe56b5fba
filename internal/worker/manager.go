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
	"sort"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

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
	// Wrapper. nil refuses the runs of a worker whose sandbox is on; the
	// others run as they are (tests of the worker alone).
	Sandbox func(runspec.SandboxRequest) (runspec.Sandboxed, error)
	// Protected are folders no run's working or extra folder may be, hold
	// or lie inside (the relay's data folder), checked at every run.
	Protected []string
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
	// OnRemoved is called with an agent's slug once its worker is gone:
	// deleted (with its agent, or without a worker at all), once its last
	// loop (and that loop's run) has ended, unless a new worker took the
	// slug by then; the app removes the worker's CLI homes. It runs
	// without the manager locked (a slow removal stalls no status, reload
	// or stop), and a loop of a worker set up again under the slug starts
	// only once it returned; an error is logged. nil does nothing.
	OnRemoved func(slug string) error
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
	// last is, per slug, the last loop started (kept once cancelled, the
	// worker disabled or deleted, while it may still finish a run) or the
	// removal of a deleted worker after it: a loop started later waits
	// for it to end, so no two runs of a slug share its CLI home and none
	// starts while it is removed. Cleared once it ends.
	last    map[string]*loopHandle
	paused  bool
	wake    chan struct{} // closed and replaced when the pause changes
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
	stopped bool
	// guarded are the snapshots of the runs under way (guardSet).
	guarded guardSet
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
		last:    make(map[string]*loopHandle),
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
			m.startLoopLocked(w, c.AgentSlug)
		}
		publish = append(publish, w)
	}
	m.mu.Unlock()
	for _, w := range publish {
		w.publish()
	}
	return nil
}

// startLoopLocked starts a loop for w, slug's worker, that begins once
// the last loop of slug (possibly still finishing a run) or the removal
// of a worker deleted before has ended. m.mu is held.
func (m *Manager) startLoopLocked(w *worker, slug string) {
	ctx, cancel := context.WithCancel(m.ctx)
	h := &loopHandle{cancel: cancel, done: make(chan struct{})}
	w.loop = h
	m.after(slug, h, func() {
		if ctx.Err() == nil {
			w.runLoop(ctx, &h.claiming)
		}
	})
}

// after makes h the last of slug and runs fn, then ends h, once the last
// before it has ended. Replaced in turn, h ends only after fn, so the one
// after it waits for both: no two of a slug ever overlap. m.mu is held.
func (m *Manager) after(slug string, h *loopHandle, fn func()) {
	prev := m.last[slug]
	m.last[slug] = h
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if prev != nil {
			<-prev.done
		}
		fn()
		m.mu.Lock()
		if m.last[slug] == h {
			delete(m.last, slug)
		}
		m.mu.Unlock()
		close(h.done)
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
	if w != nil && w.loop != nil {
		prev := w.loop
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
				// Gone from the statuses at once; a run shows to its end.
				delete(m.workers, slug)
			}
		}
		m.removeLocked(slug, w)
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
		m.startLoopLocked(w, slug)
	}
	m.mu.Unlock()
	w.publish()
	return nil
}

// removeLocked forgets w, the deleted worker of slug (nil when the
// manager had none), and tells OnRemoved, once slug's last loop has ended
// (its run too: what OnRemoved removes is the run's), unless a new worker
// took the slug by then. m.mu is held.
func (m *Manager) removeLocked(slug string, w *worker) {
	m.after(slug, &loopHandle{done: make(chan struct{})}, func() {
		m.mu.Lock()
		cur := m.workers[slug]
		gone := cur == nil || cur == w
		if gone {
			delete(m.workers, slug)
		}
		m.mu.Unlock()
		if !gone || m.opts.OnRemoved == nil {
			return
		}
		if err := m.opts.OnRemoved(slug); err != nil {
			m.log.Error("worker: clean up after a deleted worker", "agent", slug, "err", err)
		}
	})
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

// Stop ends every loop, kills the running CLIs' process trees and waits for
// the runs to end (a fresh run's task goes back to the queue, a turn in a
// session is settled from its transcript), or until ctx ends; then it
// settles the runs still going itself, the same way (settleRunning).
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
		// A run did not end in time: settle its task now, while the store
		// is still open, instead of leaving it claimed until its lease
		// runs out.
		return errors.Join(fmt.Errorf("worker: stop: %w", ctx.Err()), m.settleRunning())
	}
}

// settleRunning settles the task of every run still going as recovery
// does (settleClaim): a fresh run's task goes back to the queue; a turn
// delivered into a session is never put back (the peer could do the work
// twice): the answer its transcript holds is reported as recovered, else
// the task is blocked as not re-sent.
func (m *Manager) settleRunning() error {
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
		err := m.settleTask(ctx, slug, cur.ID)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("worker: settle task %s of %s: %w", cur.ID, slug, err))
		}
	}
	return errors.Join(errs...)
}

// settleTask settles slug's worker claim on task id (settleClaim), unless
// the task is no longer that claim; a run that reports at the same moment
// wins.
func (m *Manager) settleTask(ctx context.Context, slug, id string) error {
	t, err := m.opts.Relay.Task(ctx, id)
	if err != nil {
		return err
	}
	if t.Status != relay.StatusClaimed || t.ClaimedVia != relay.ViaWorker || t.RecipientSlug != slug {
		return nil
	}
	if err := m.settleClaim(ctx, t, shutdownReason); err != nil && relay.ErrorCode(err) != relay.ETaskUpdateDenied {
		return err
	}
	return nil
}
