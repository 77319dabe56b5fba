package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// Workers configures and watches the workers that run agents' tasks with
// an agent CLI on this computer. Setting them up is allowed only from this
// computer (see bridgeAccess).
type Workers struct {
	c *core

	mu  sync.RWMutex
	mgr *worker.Manager
	// detect is replaced in tests.
	detect func(context.Context) []harness.Detected
	env    harness.Env
}

func (w *Workers) manager() (*worker.Manager, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.mgr == nil {
		return nil, errNotStarted
	}
	return w.mgr, nil
}

func (w *Workers) setManager(m *worker.Manager) {
	w.mu.Lock()
	w.mgr = m
	w.mu.Unlock()
	w.c.mu.Lock()
	w.c.onPause = m.SetPaused
	w.c.onAgentDeleted = func(ctx context.Context, slug string) error {
		// The running loops' own configurations say which are stale: every
		// worker that took tasks from the agent; and the agent's own, gone
		// with it, whose CLI homes go too (also those of a worker deleted
		// while the relay could not remove them).
		errs := []error{m.Reload(ctx, slug)}
		for _, st := range m.Statuses() {
			if st.AgentSlug != slug && slices.Contains(st.AllowedSenders, slug) {
				if err := m.Reload(ctx, st.AgentSlug); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return errors.Join(errs...)
	}
	w.c.reloadWorkers = func(ctx context.Context, slugs []string) error {
		var errs []error
		for _, slug := range slugs {
			errs = append(errs, m.Reload(ctx, slug))
		}
		return errors.Join(errs...)
	}
	w.c.mu.Unlock()
}

// WorkersOverview is every worker's status with the relay-wide worker settings.
type WorkersOverview struct {
	Paused        bool                 `json:"paused"`
	MaxChainDepth int                  `json:"maxChainDepth"`
	Workers       []relay.WorkerStatus `json:"workers"`
}

// List returns every worker's configuration and live state.
func (w *Workers) List() (WorkersOverview, error) {
	svc, ctx, err := w.c.get()
	if err != nil {
		return WorkersOverview{}, err
	}
	m, err := w.manager()
	if err != nil {
		return WorkersOverview{}, err
	}
	set, err := svc.Settings(ctx)
	if err != nil {
		return WorkersOverview{}, err
	}
	statuses := m.Statuses()
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].AgentSlug < statuses[j].AgentSlug })
	if statuses == nil {
		statuses = []relay.WorkerStatus{}
	}
	return WorkersOverview{Paused: set.WorkersPaused, MaxChainDepth: set.MaxChainDepth, Workers: statuses}, nil
}

// Harness is an agent CLI found on this computer, or a preset that was not:
// the preset as detected, and whether it can be chosen (found, or custom).
type Harness struct {
	harness.Detected
	Found bool `json:"found"`
}

// LocalInfo describes this computer for the Connect page.
type LocalInfo struct {
	Hostname  string    `json:"hostname"`
	Home      string    `json:"home"`
	MCPURL    string    `json:"mcpUrl"`
	Harnesses []Harness `json:"harnesses"`
	// SearchPath is the PATH the CLIs were looked for on: the relay
	// process's own, not that of a terminal that asks.
	SearchPath string `json:"searchPath"`
}

// Local lists the agent CLIs detected on this computer (and "other
// command-line agent"), with the hostname used for default slugs.
func (w *Workers) Local() (LocalInfo, error) {
	_, ctx, err := w.c.get()
	if err != nil {
		return LocalInfo{}, err
	}
	host, _ := os.Hostname()
	home, _ := os.UserHomeDir()
	found := map[string]harness.Detected{}
	for _, d := range w.detect(ctx) {
		found[d.ID] = d
	}
	var out []Harness
	for _, p := range harness.Presets() {
		h := Harness{Detected: harness.Detected{ID: p.ID, Name: p.Name, CanRun: p.CanRun, ExtraDirs: p.ExtraDirs, Safety: p.Safety}}
		if d, ok := found[p.ID]; ok {
			h.Path, h.Version, h.Found, h.Note = d.Path, d.Version, d.Path != "", d.Note
			h.Tested = d.Tested
		}
		if r, ok := harness.Tested(p.ID); ok {
			h.TestedRange = r.String()
		}
		if p.ID == harness.Custom {
			h.Found = true
		}
		out = append(out, h)
	}
	return LocalInfo{Hostname: host, Home: home, MCPURL: w.c.config().MCPURL(), Harnesses: out, SearchPath: w.env.PATH}, nil
}

// checkFiles checks what Validate cannot: the program and the folders exist.
func (w *Workers) checkFiles(cfg relay.WorkerConfig) (relay.WorkerConfig, error) {
	p, known := harness.Lookup(cfg.Harness)
	if !known || !p.CanRun {
		return cfg, relay.Errorf(relay.EInvalidRequest, "harness: %q cannot run tasks; choose a detected agent CLI or \"custom\".", cfg.Harness)
	}
	if cfg.Command == "" && cfg.Harness != harness.Custom {
		cfg.Command = harness.Find(cfg.Harness, w.env)
	}
	switch {
	case cfg.Command == "" && cfg.Harness == harness.Custom:
		return cfg, relay.Errorf(relay.EInvalidRequest, "command: the custom harness runs the program you name: give its path (Program on the dashboard, --command on the CLI).")
	case cfg.Command == "":
		return cfg, relay.Errorf(relay.EInvalidRequest, "command: choose the program to run: %s was not found on the relay's PATH (%s) nor where it usually installs. Give the program's path (Program on the dashboard, --command on the CLI), or start the relay with its folder on its PATH.", p.Name, w.env.PATH)
	}
	if !filepath.IsAbs(cfg.Command) {
		return cfg, relay.Errorf(relay.EInvalidRequest, "command: must be an absolute path, got %q.", cfg.Command)
	}
	if st, err := os.Stat(cfg.Command); err != nil || st.IsDir() {
		return cfg, relay.Errorf(relay.EInvalidRequest, "command: %s is not a program on this computer.", cfg.Command)
	}
	for i, dir := range append([]string{cfg.Workdir}, cfg.ExtraDirs...) {
		field := "workdir"
		if i > 0 {
			field = fmt.Sprintf("extraDirs[%d]", i-1)
		}
		if !filepath.IsAbs(dir) {
			return cfg, relay.Errorf(relay.EInvalidRequest, "%s: must be an absolute path, got %q.", field, dir)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return cfg, relay.Errorf(relay.EInvalidRequest, "%s: %s is not a folder on this computer.", field, dir)
		}
		if overlapsDataDir(dir, w.c.config().DataDir) {
			return cfg, relay.Errorf(relay.EInvalidRequest,
				"%s: %s holds the relay's data folder (or is inside it), where its database and admin token live; choose a project folder.", field, dir)
		}
	}
	cfg, err := w.bindSession(cfg)
	if err != nil {
		return cfg, err
	}
	cfg.Pinned = pins(cfg)
	if cfg.Harness == harness.Custom && cfg.PromptMode == relay.PromptFile && !strings.Contains(strings.Join(cfg.Args, "\x00"), "{prompt_file}") {
		return cfg, relay.Errorf(relay.EInvalidRequest, "args: with the prompt in a file, one argument must contain {prompt_file}.")
	}
	return cfg, nil
}

// Save creates or replaces an agent's worker and (re)starts it.
func (w *Workers) Save(cfg relay.WorkerConfig) (relay.WorkerStatus, error) {
	svc, ctx, err := w.c.get()
	if err != nil {
		return relay.WorkerStatus{}, err
	}
	m, err := w.manager()
	if err != nil {
		return relay.WorkerStatus{}, err
	}
	if cfg, err = cfg.Validate(); err != nil {
		return relay.WorkerStatus{}, err
	}
	if cfg, err = w.checkFiles(cfg); err != nil {
		return relay.WorkerStatus{}, err
	}
	if _, err := svc.SaveWorker(ctx, cfg); err != nil {
		return relay.WorkerStatus{}, err
	}
	if err := m.Reload(ctx, cfg.AgentSlug); err != nil {
		return relay.WorkerStatus{}, err
	}
	st, _ := m.Status(cfg.AgentSlug)
	return st, nil
}

// Remove deletes an agent's worker; its chat sessions get its tasks again.
// An agent with none is an unknown_worker error.
func (w *Workers) Remove(slug string) error {
	svc, ctx, err := w.c.get()
	if err != nil {
		return err
	}
	m, err := w.manager()
	if err != nil {
		return err
	}
	// Removing what is not there is said (unknown_worker), not reported as
	// done: the store's delete alone would succeed.
	if _, err := svc.Worker(ctx, slug); err != nil {
		return err
	}
	if err := svc.DeleteWorker(ctx, slug); err != nil {
		return err
	}
	return m.Reload(ctx, slug)
}

// SetPaused pauses or resumes every worker (running CLIs finish their task).
func (w *Workers) SetPaused(paused bool) (bool, error) {
	svc, ctx, err := w.c.get()
	if err != nil {
		return false, err
	}
	set, err := svc.Settings(ctx)
	if err != nil {
		return false, err
	}
	set.WorkersPaused = paused
	if _, err := svc.UpdateSettings(ctx, set); err != nil {
		return false, err
	}
	if f := w.c.pauseHook(); f != nil {
		f(paused)
	}
	return paused, nil
}

// ConnectInput sets up an agent CLI on this computer in one step.
type ConnectInput struct {
	Harness     string `json:"harness"`
	Slug        string `json:"slug"`
	DisplayName string `json:"displayName"`
	ModelSlug   string `json:"modelSlug,omitempty"`
	Role        string `json:"role,omitempty"`
	// ConfigureClient adds the relay to the tool's own settings so its chats can use it too.
	ConfigureClient bool `json:"configureClient"`
	// Worker, when set, runs the agent's tasks automatically (AgentSlug and Harness are filled in).
	Worker *relay.WorkerConfig `json:"worker,omitempty"`
}

// ConnectResult tells what Connect did.
type ConnectResult struct {
	Agent      relay.Agent         `json:"agent"`
	Connection harness.Connection  `json:"connection"`
	Token      string              `json:"token,omitempty"`
	Worker     *relay.WorkerStatus `json:"worker,omitempty"`
}

// Connect creates the agent and its token, adds the relay to the tool's
// settings, and starts its worker. The worker is checked before anything is
// created, so a refused setup leaves nothing half made.
func (w *Workers) Connect(in ConnectInput) (ConnectResult, error) {
	svc, ctx, err := w.c.get()
	if err != nil {
		return ConnectResult{}, err
	}
	p, ok := harness.Lookup(in.Harness)
	if !ok {
		return ConnectResult{}, relay.Errorf(relay.EInvalidRequest, "harness: unknown agent CLI %q.", in.Harness)
	}
	slug, err := relay.NormalizeSlug("slug", in.Slug)
	if err != nil {
		return ConnectResult{}, err
	}
	var wc relay.WorkerConfig
	if in.Worker != nil {
		wc = *in.Worker
		wc.AgentSlug, wc.Harness = slug, p.ID
		if wc, err = wc.Validate(); err != nil {
			return ConnectResult{}, err
		}
		if wc, err = w.checkFiles(wc); err != nil {
			return ConnectResult{}, err
		}
	}
	model := in.ModelSlug
	if model == "" {
		model = p.Name
	}
	agent, token, err := svc.CreateAgent(ctx, relay.CreateAgentInput{
		Slug: slug, DisplayName: in.DisplayName, ModelSlug: model,
		Capabilities: []string{"code-execution", "file-system", "text-input", "text-output"},
	})
	if err != nil {
		return ConnectResult{}, err
	}
	upd := relay.ProfileUpdate{DisplayName: &agent.DisplayName}
	if strings.TrimSpace(in.Role) != "" {
		upd.Details = &in.Role
	}
	if agent, err = svc.UpdateProfile(ctx, slug, upd); err != nil {
		return ConnectResult{}, err
	}
	mcpURL := w.c.config().MCPURL()
	snippet := web.SetupFor(mcpURL, token).JSONSnippet()
	res := ConnectResult{Agent: agent, Connection: harness.Connection{Message: "Add the relay to the tool's MCP settings with this snippet.", Snippet: snippet}}
	if in.ConfigureClient && p.ID != harness.Custom {
		conn, err := harness.Connect(ctx, p.ID, w.env, mcpURL, token)
		if err != nil {
			conn = harness.Connection{Message: "Could not update the tool's settings: " + err.Error(), Snippet: snippet}
		}
		res.Connection = conn
	}
	if !res.Connection.Configured {
		res.Token = token
	}
	if in.Worker != nil {
		st, err := w.Save(wc)
		if err != nil {
			return res, err
		}
		res.Worker = &st
	}
	return res, nil
}

// pins are where the worker's folders and allowed paths lead now (every
// symbolic link followed), recorded when it is saved: each run checks they
// still lead there, so a link a run puts in place of one of them later (a
// folder another worker uses, an allowed path inside a working folder)
// stops the next run instead of giving it where the link leads.
func pins(cfg relay.WorkerConfig) map[string]string {
	out := map[string]string{}
	for _, p := range cfg.PinnedPaths() {
		if filepath.IsAbs(p) {
			out[p] = realdir.Pin(p)
		}
	}
	return out
}

// pinUnpinned pins the paths of the workers saved before paths were pinned
// (their next run checks them against where they lead now), once, when
// the relay starts; failures are logged and tried again at the next start.
func pinUnpinned(ctx context.Context, svc relay.WorkerService, log *slog.Logger) {
	workers, err := svc.ListWorkers(ctx)
	if err != nil {
		log.Error("workers: list them to pin their paths", "err", err)
		return
	}
	for _, c := range workers {
		if len(c.Pinned) > 0 {
			continue
		}
		c.Pinned = pins(c)
		if _, err := svc.SaveWorker(ctx, c); err != nil {
			log.Error("workers: pin the paths of a worker saved by an earlier version", "agent", c.AgentSlug, "err", err)
		}
	}
}
