package app

import (
	"context"
	"sync"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// core is what every bound service shares: the relay service once it is
// started, the configuration and the context of the running app.
type core struct {
	mu      sync.RWMutex
	svc     relay.Service
	cfg     config.Config
	ctx     context.Context
	version string
	// onPause tells the workers about a pause or resume.
	onPause func(bool)
	// onAgentDeleted reloads the workers a deleted agent's removal changed.
	onAgentDeleted func(ctx context.Context, slug string) error
	// reloadWorkers applies the saved configuration of the named agents'
	// workers (their allowed senders were renamed in the store).
	reloadWorkers func(ctx context.Context, slugs []string) error
}

func (c *core) reloadWorkersHook() func(context.Context, []string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.reloadWorkers == nil {
		return func(context.Context, []string) error { return nil } // no workers run
	}
	return c.reloadWorkers
}

func (c *core) agentDeletedHook() func(context.Context, string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.onAgentDeleted
}

func (c *core) pauseHook() func(bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.onPause
}

var errNotStarted = relay.Errorf(relay.EInternal, "The relay has not started yet.")

// attach makes svc available to the services; ctx ends when the relay stops.
func (c *core) attach(ctx context.Context, svc relay.Service, cfg config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.svc, c.cfg = ctx, svc, cfg
}

// get returns the service and the app context, or an error before start.
func (c *core) get() (relay.Service, context.Context, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.svc == nil {
		return nil, nil, errNotStarted
	}
	return c.svc, c.ctx, nil
}

func (c *core) config() config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

// Services are the structs bound to the dashboard. Their exported methods
// are the dashboard's whole API.
type Services struct {
	Tasks    *Tasks
	Agents   *Agents
	Invites  *Invites
	Overview *Overview
	Events   *Events
	Settings *Settings
	System   *System
	Workers  *Workers
	Mesh     *Mesh
	Insights *Insights

	core *core
}

// NewServices returns unattached services: they can be bound before the
// relay starts, and answer "not started" until it has.
func NewServices(version string) *Services {
	c := &core{version: version}
	return &Services{
		Tasks:    &Tasks{c},
		Agents:   &Agents{c},
		Invites:  &Invites{c},
		Overview: &Overview{c},
		Events:   &Events{c},
		Settings: &Settings{c},
		System:   &System{c: c, autostart: defaultAutostart},
		Workers:  &Workers{c: c, detect: func(ctx context.Context) []harness.Detected { return harness.Detect(ctx, harness.SystemEnv()) }, env: harness.SystemEnv()},
		Mesh:     &Mesh{c: c},
		Insights: &Insights{c: c},
		core:     c,
	}
}

// Bound lists the services by the name the bridge and Wails use.
func (s *Services) Bound() map[string]any {
	return map[string]any{
		"Tasks":    s.Tasks,
		"Agents":   s.Agents,
		"Invites":  s.Invites,
		"Overview": s.Overview,
		"Events":   s.Events,
		"Settings": s.Settings,
		"System":   s.System,
		"Workers":  s.Workers,
		"Mesh":     s.Mesh,
		"Insights": s.Insights,
	}
}

// List returns the services in a stable order, for Wails' Bind option.
func (s *Services) List() []any {
	return []any{s.Tasks, s.Agents, s.Invites, s.Overview, s.Events, s.Settings, s.System, s.Workers, s.Mesh, s.Insights}
}

// SetLaunchArgs makes start at login (System.SetStartAtLogin) repeat the
// flags the window app was started with.
func (s *Services) SetLaunchArgs(args []string, dataDir string) {
	s.System.setLaunchArgs(args, dataDir)
}

// AttachWindow gives the services the window app's runtime (dialogs, the
// folder picker) and what System.Show and System.Quit do there.
func (s *Services) AttachWindow(rt Runtime, show, quit func()) {
	s.System.setQuit(quit)
	s.System.setShow(show)
	s.System.setRuntime(rt)
}

// TrackFocus starts recording the focus the window's page reports
// (System.ReportFocus) and returns it.
func (s *Services) TrackFocus() *Focus {
	f := &Focus{}
	s.System.setFocus(f)
	return f
}
