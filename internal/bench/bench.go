// Package bench is the load generator behind `crosschat-relay bench`. It
// speaks MCP to a relay as raw JSON-RPC over real HTTP, with a real
// per-agent token for every agent, and measures side by side: the full task
// lifecycle with N concurrent agents, the wake-up latency of a waiting
// claim (and, on a disk the caller names, the floor under it: the disk's
// own write and fsync, and a do-nothing service doing that per request,
// after the same idle gap), claim latency with a short and a long queue,
// and (for a relay in this process) start-up time and idle memory.
//
// It imports only the standard library and internal/relay; the caller
// starts an in-process relay when there is none to point at.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Defaults and bounds of Options.
const (
	DefaultAgents       = 8
	DefaultTasks        = 2000
	DefaultWakeSamples  = 200
	DefaultClaimSamples = 200
	DefaultWindow       = 4
	DefaultTimeout      = 45 * time.Minute
	DefaultWakeSettle   = 25 * time.Millisecond
	DefaultCommitWindow = 2 * time.Second

	MaxAgents  = 256
	MaxTasks   = 1_000_000
	MaxQueue   = 1_000_000
	MaxSamples = 100_000
)

// DefaultQueueSizes are the queue depths claim latency is measured at.
var DefaultQueueSizes = []int{10, 100_000}

// Options configure Run. Zero values mean the defaults.
type Options struct {
	// URL is the relay's base URL, e.g. http://127.0.0.1:4318 (required).
	URL string
	// AdminToken creates the bench agents through the bridge (required).
	AdminToken string
	// Agents is how many agents run the lifecycle concurrently; each posts
	// to the next one and works for the previous one.
	Agents int
	// Tasks is how many lifecycles run in all.
	Tasks int
	// Window is how many of its tasks each sender keeps open at once.
	Window int
	// QueueSizes are the queue depths claim latency is measured at; nil
	// means DefaultQueueSizes, an empty non-nil slice skips the phase.
	QueueSizes []int
	// ClaimSamples is how many claims are timed at each queue depth.
	ClaimSamples int
	// WakeSamples is how many wake-ups are timed; negative skips the phase.
	WakeSamples int
	// WakeSettle is how long a waiting claim is given to park on the relay
	// after its request is written, before the task is posted.
	WakeSettle time.Duration
	// CommitWindow is how long each half of the commit-rate phase runs;
	// negative skips the phase.
	CommitWindow time.Duration
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Service, when the relay runs in this process, is its domain service:
	// long queues are then seeded through it directly instead of over HTTP.
	Service relay.Service
	// InProcess says the relay runs in this process: its memory is read
	// from /proc/self/status.
	InProcess bool
	// Probe, when set, reads the relay process's CPU, memory and commit
	// counts: the bench then reports CPU per tool call, fsyncs per
	// lifecycle, RSS after load and runs the waiters phase.
	Probe Probe
	// SelfCPU, when set with a Probe, reads this process's own CPU time:
	// the lifecycle phase then also reports what the load generator spent
	// per call, on the same cores as the relay.
	SelfCPU func() (time.Duration, error)
	// Profiler, when set, records the relay's CPU profile over the
	// lifecycle phase.
	Profiler Profiler
	// Waiters is how many waiting claims the waiters phase parks at once
	// (needs Probe); 0 means DefaultWaiters, negative skips the phase.
	Waiters int
	// FloorDir, when set, is a folder on the relay's disk (its data folder):
	// after the wake-up phase the bench times the disk's own write and fsync
	// there, with the same idle gap before each (DiskFloor).
	FloorDir string
	// FloorURL, with FloorDir, is a FloorServer committing in that folder,
	// in a process of its own: the bench times requests to it as well
	// (ServiceFloor).
	FloorURL string
	// Startup is how long the relay took from start to /health 200, when the
	// caller measured it.
	Startup time.Duration
	// Progress receives progress lines (stderr); nil discards them.
	Progress io.Writer
	// Peer, when set, is a second relay in one mesh with the first: the
	// bench then measures what crosses between them (mesh.go).
	Peer *Peer
}

func (o Options) withDefaults() (Options, error) {
	if o.URL == "" {
		return o, errors.New("bench: the relay URL is required")
	}
	if o.AdminToken == "" {
		return o, errors.New("bench: the admin token is required")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Agents, DefaultAgents)
	def(&o.Tasks, DefaultTasks)
	def(&o.Window, DefaultWindow)
	def(&o.ClaimSamples, DefaultClaimSamples)
	def(&o.WakeSamples, DefaultWakeSamples)
	def(&o.Waiters, DefaultWaiters)
	if o.QueueSizes == nil {
		o.QueueSizes = DefaultQueueSizes
	}
	if o.WakeSettle <= 0 {
		o.WakeSettle = DefaultWakeSettle
	}
	if o.CommitWindow == 0 {
		o.CommitWindow = DefaultCommitWindow
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case o.Agents < 1 || o.Agents > MaxAgents:
		return o, fmt.Errorf("bench: agents must be 1..%d, got %d", MaxAgents, o.Agents)
	case o.Tasks < 1 || o.Tasks > MaxTasks:
		return o, fmt.Errorf("bench: tasks must be 1..%d, got %d", MaxTasks, o.Tasks)
	case o.Window < 1 || o.Window > 100:
		return o, fmt.Errorf("bench: window must be 1..100, got %d", o.Window)
	case o.ClaimSamples < 1 || o.ClaimSamples > MaxSamples:
		return o, fmt.Errorf("bench: claim samples must be 1..%d, got %d", MaxSamples, o.ClaimSamples)
	case o.Waiters > MaxWaiters:
		return o, fmt.Errorf("bench: waiters must be at most %d, got %d", MaxWaiters, o.Waiters)
	case o.WakeSamples > MaxSamples:
		return o, fmt.Errorf("bench: wake samples must be at most %d, got %d", MaxSamples, o.WakeSamples)
	}
	if o.Peer != nil {
		if o.Peer.URL == "" || o.Peer.AdminToken == "" {
			return o, errors.New("bench: the peer relay's URL and admin token are required")
		}
		// What one relay does alone is measured without --mesh.
		o.QueueSizes, o.Waiters = []int{}, -1
	}
	for _, q := range o.QueueSizes {
		if q < 1 || q > MaxQueue {
			return o, fmt.Errorf("bench: queue sizes must be 1..%d, got %d", MaxQueue, q)
		}
	}
	return o, nil
}

// agent is one bench agent with its own token, and the client of its relay.
type agent struct {
	slug  string
	token string
	c     *Client
}

// runner holds one run's state.
type runner struct {
	o      Options
	c      *Client
	pc     *Client // the peer relay's, in a mesh (else c)
	pr     *progress
	agent  []agent // lifecycle agents
	worker []agent // in a mesh, the peer's agents that work for them
	wakeR  agent   // wake-up recipient
	wakeS  agent   // wake-up sender
	queue  []agent // one recipient per queue size
	prefix string
}

// Run performs every phase against the relay and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	rep := &Report{
		Target: Target{URL: o.URL, InProcess: o.InProcess},
		Machine: Machine{
			GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		},
		StartupMs: Ms(o.Startup),
	}
	if o.Probe != nil {
		if sm, err := o.Probe.Sample(ctx); err == nil {
			rep.Memory = &Memory{IdleRSS: sm.RSS, IdleAnon: sm.RSSAnon}
		}
	} else if o.InProcess {
		if m, err := ReadMemory(); err == nil {
			rep.Memory = &Memory{IdleRSS: m.RSS}
		}
	}
	r := &runner{o: o, c: NewClient(o.URL, 4*o.Agents+16), pr: newProgress(o.Progress)}
	defer r.c.Close()
	r.pc = r.c
	if err := r.c.Health(ctx); err != nil {
		return nil, fmt.Errorf("bench: relay at %s: %w", o.URL, err)
	}
	if o.Peer != nil {
		r.pc = NewClient(o.Peer.URL, 4*o.Agents+16)
		defer r.pc.Close()
		if err := r.pc.Health(ctx); err != nil {
			return nil, fmt.Errorf("bench: peer relay at %s: %w", o.Peer.URL, err)
		}
		rep.Target.PeerURL = o.Peer.URL
	}
	if rep.Setup, err = r.setup(ctx); err != nil {
		return nil, err
	}
	if o.CommitWindow > 0 {
		c, err := r.commits(ctx)
		if err != nil {
			return nil, err
		}
		rep.Commits = &c
	}
	var (
		before, peerBefore Sample
		selfCPU            = o.SelfCPU
		cpu0               time.Duration
	)
	if o.Peer != nil && o.Peer.Probe != nil {
		if peerBefore, err = o.Peer.Probe.Sample(ctx); err != nil {
			return nil, fmt.Errorf("bench: peer: %w", err)
		}
	}
	if o.Probe != nil {
		if before, err = o.Probe.Sample(ctx); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if selfCPU != nil {
			if cpu0, err = selfCPU(); err != nil {
				selfCPU = nil // not on this system: the figure is left out
			}
		}
	}
	if o.Profiler != nil {
		if err := o.Profiler.StartCPUProfile(ctx); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	if rep.Lifecycle, err = r.lifecycle(ctx); err != nil {
		return nil, err
	}
	if o.Profiler != nil {
		if err := o.Profiler.StopCPUProfile(ctx); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	if o.Peer != nil && o.Peer.Probe != nil {
		after, err := o.Peer.Probe.Sample(ctx)
		if err != nil {
			return nil, fmt.Errorf("bench: peer: %w", err)
		}
		u := usage(peerBefore, after, rep.Lifecycle)
		rep.Peer = &u
	}
	if o.Probe != nil {
		if selfCPU != nil && rep.Lifecycle.Ops > 0 {
			if cpu, err := selfCPU(); err == nil {
				rep.Lifecycle.BenchCPUPerCallMs = Ms(cpu-cpu0) / float64(rep.Lifecycle.Ops)
			}
		}
		after, err := o.Probe.Sample(ctx)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		u := usage(before, after, rep.Lifecycle)
		rep.Relay = &u
		if rep.Memory != nil {
			rep.Memory.LoadRSS, rep.Memory.LoadAnon = after.RSS, after.RSSAnon
		}
		r.pr.linef("bench: relay CPU %.3f ms per tool call, %.2f fsyncs per lifecycle, RSS after load %s", u.CPUPerCallMs, u.FsyncsPerLifecycle, mib(after.RSS))
	}
	if o.WakeSamples > 0 {
		w, err := r.wake(ctx)
		if err != nil {
			return nil, err
		}
		rep.Wake = &w
		if o.FloorDir != "" {
			f, err := r.floor(ctx)
			if err != nil {
				return nil, err
			}
			rep.Floor = &f
		}
	}
	if o.Probe != nil && o.Waiters > 0 {
		w, err := r.waiters(ctx, o.Waiters)
		if err != nil {
			return nil, err
		}
		rep.Waiters = &w
	}
	for i, size := range o.QueueSizes {
		q, err := r.queueClaims(ctx, r.queue[i], size)
		if err != nil {
			return nil, err
		}
		rep.Queues = append(rep.Queues, q)
	}
	if rep.Memory != nil && o.Probe == nil {
		if m, err := ReadMemory(); err == nil {
			rep.Memory.LoadRSS, rep.Memory.PeakRSS = m.RSS, m.Peak
		}
	}
	rep.ElapsedMs = Ms(time.Since(start))
	return rep, nil
}

// raiseOpenTaskCap lifts the relay's per-sender open-task cap (the queue
// phase's one sender leaves every seeded task open) through the bridge,
// when the queue sizes need more than it allows.
func (r *runner) raiseOpenTaskCap(ctx context.Context) error {
	need := 1000 // the lifecycle phases' open tasks, with room to spare
	for _, size := range r.o.QueueSizes {
		need += size
	}
	need = min(need, relay.MaxOpenTasksLimit)
	var set relay.Settings
	if err := r.c.Bridge(ctx, r.o.AdminToken, "Settings", "Get", &set); err != nil {
		return fmt.Errorf("bench: read settings: %w", err)
	}
	if set.MaxOpenTasksPerSender >= need {
		return nil
	}
	set.MaxOpenTasksPerSender = need
	if err := r.c.Bridge(ctx, r.o.AdminToken, "Settings", "Update", nil, set); err != nil {
		return fmt.Errorf("bench: raise the open-task cap to %d: %w", need, err)
	}
	r.pr.linef("bench: raised the relay's open-task cap per sender to %d for the queue phase", need)
	return nil
}

// setup creates the bench agents through the bridge, each with its own
// token, under a fresh random prefix so runs never collide.
func (r *runner) setup(ctx context.Context) (Setup, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Setup{}, fmt.Errorf("bench: random prefix: %w", err)
	}
	prefix := "bench-" + hex.EncodeToString(b[:])
	r.prefix = prefix
	create := func(name string) (agent, error) { return r.create(ctx, r.c, r.o.AdminToken, name) }
	// In a mesh, the agents that work (and wait) are the peer's.
	onPeer := create
	if r.o.Peer != nil {
		onPeer = func(name string) (agent, error) { return r.create(ctx, r.pc, r.o.Peer.AdminToken, name) }
	}
	var err error
	for i := range r.o.Agents {
		a, err := create(fmt.Sprintf("a%d", i))
		if err != nil {
			return Setup{}, err
		}
		r.agent = append(r.agent, a)
	}
	if r.wakeS, err = create("wake-sender"); err != nil {
		return Setup{}, err
	}
	if r.wakeR, err = onPeer("wake-recipient"); err != nil {
		return Setup{}, err
	}
	if r.o.Peer != nil {
		for i := range r.o.Agents {
			a, err := onPeer(fmt.Sprintf("worker-%d", i))
			if err != nil {
				return Setup{}, err
			}
			r.worker = append(r.worker, a)
		}
		if err := r.awaitMesh(ctx); err != nil {
			return Setup{}, err
		}
	}
	for _, size := range r.o.QueueSizes {
		a, err := create(fmt.Sprintf("queue-%d", size))
		if err != nil {
			return Setup{}, err
		}
		r.queue = append(r.queue, a)
	}
	if err := r.raiseOpenTaskCap(ctx); err != nil {
		return Setup{}, err
	}
	n := len(r.agent) + 2 + len(r.queue) + len(r.worker)
	r.pr.linef("bench: created %d agents (%s-*) with their own tokens", n, prefix)
	return Setup{Prefix: prefix, Agents: n, Via: "POST /bridge/Agents.Create (admin token) → per-agent cca_ tokens"}, nil
}

// create makes one bench agent through the bridge of the relay c speaks
// to (with its admin token), with its own token.
func (r *runner) create(ctx context.Context, c *Client, adminToken, name string) (agent, error) {
	slug := r.prefix + "-" + name
	var out struct {
		Agent relay.Agent `json:"agent"`
		Token string      `json:"token"`
	}
	in := relay.CreateAgentInput{
		Slug: slug, DisplayName: "Bench " + name, ModelSlug: "bench",
		Capabilities: []string{"text-input", "text-output"},
	}
	if err := c.Bridge(ctx, adminToken, "Agents", "Create", &out, in); err != nil {
		return agent{}, fmt.Errorf("bench: create agent %s: %w", slug, err)
	}
	if !strings.HasPrefix(out.Token, relay.AgentTokenPrefix) {
		return agent{}, fmt.Errorf("bench: create agent %s: no agent token in the answer", slug)
	}
	return agent{slug: out.Agent.Slug, token: out.Token, c: c}, nil
}

// share is how many of total tasks sender i of n posts.
func share(total, n, i int) int {
	s := total / n
	if i < total%n {
		s++
	}
	return s
}
