package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/filelock"
	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/metrics"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/tick"
	"github.com/crosschat/crosschat-relay/internal/watch"
	"github.com/crosschat/crosschat-relay/internal/web"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// SweepInterval is how often expired leases are requeued and old tasks pruned.
const SweepInterval = 60 * time.Second

// Relay is one running relay: the database, the HTTP listener (MCP,
// enrollment, health, bridge, dashboard) and the maintenance sweep.
type Relay struct {
	// Services are the bound dashboard services, attached to this relay.
	Services *Services

	cfg        config.Config
	log        *slog.Logger
	lock       *filelock.File // the data folder's, held until Shutdown has closed the rest
	db         *store.DB
	srv        *http.Server
	ln         net.Listener
	cancelReqs context.CancelFunc
	cancelBg   context.CancelFunc
	wg         sync.WaitGroup
	served     chan error
	workers    *worker.Manager
	adminToken string
	mesh       *mesh.Node // nil without --nats
	metrics    *metrics.Metrics
}

// StartOptions are the parts of a relay that come from the binary.
type StartOptions struct {
	Version string
	// Assets is the built dashboard (frontend/dist); nil serves none.
	Assets fs.FS
	Logger *slog.Logger
	// Services to attach; nil creates new ones.
	Services *Services
	// WorkerMinute is the length of a worker time-limit minute; tests shrink it.
	WorkerMinute time.Duration
	// Mode is "app" or "serve", as `status` reports it; default "serve".
	Mode string
	// Now is the store's clock (presence, leases, timestamps); nil is
	// time.Now. Tests inject one to pass time without waiting.
	Now func() time.Time
}

// Start listens on cfg's address, locks the data folder (lockDataDir: a
// second relay on the folder fails here), opens the database and serves.
// It returns once the relay accepts connections.
func Start(cfg config.Config, opts StartOptions) (*Relay, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := ensureDataDir(cfg); err != nil {
		return nil, err
	}
	token, err := cfg.AdminToken(true)
	if err != nil {
		return nil, err
	}
	ln, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Port == 0 { // tests and bench ask for any free port
		cfg.Port = ln.Addr().(*net.TCPAddr).Port
	}
	// After the listener: a second window on the same port still finds the
	// first by its address (shell's showRunning) before the lock would refuse it.
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		ln.Close()
		return nil, err
	}
	db, err := store.Open(cfg.DatabasePath(), store.Options{
		OperatorSlug:  cfg.OperatorSlug,
		RetentionDays: cfg.TaskRetentionDays,
		Logger:        log,
		Now:           opts.Now,
	})
	if err != nil {
		ln.Close()
		lock.Unlock()
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetSecrets(token)
	node, origin, err := startMesh(cfg, db, log)
	if err != nil {
		ln.Close()
		db.Close()
		lock.Unlock()
		return nil, err
	}
	svc := meshService(db, node)
	services := opts.Services
	if services == nil {
		services = NewServices(opts.Version)
	}
	bg, cancelBg := context.WithCancel(context.Background())
	services.core.attach(bg, svc, cfg)
	db.SetSessionResolver(services.Workers.targetResolver(db, db)) // a post's targetSession is checked at once
	services.Mesh.setNode(node)
	services.Mesh.setSettings(db.Mesh(), origin)
	met := newMetrics(svc, node, services.Workers)
	// reqCtx ends with Shutdown: long-polls then answer at once.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	mcpHandler := mcp.NewHandler(svc, mcp.Options{Version: opts.Version, Logger: log, Observer: met})
	handler, err := web.NewHandler(web.Config{
		Service:        svc,
		AdminToken:     token,
		MCP:            mcpHandler,
		Services:       services.Bound(),
		Access:         bridgeMethodAccess,
		AllowedHosts:   cfg.AllowedHosts,
		AllowedOrigins: cfg.AllowedOrigins,
		PublicURL:      cfg.PublicURL,
		Assets:         opts.Assets,
		Version:        opts.Version,
		Logger:         log,
		Push:           db,
		Metrics:        met.Handler(),
	})
	if err != nil {
		cancelReqs()
		cancelBg()
		ln.Close()
		if node != nil {
			node.Close()
		}
		db.Close()
		lock.Unlock()
		return nil, fmt.Errorf("build http handler: %w", err)
	}
	r := &Relay{
		Services:   services,
		cfg:        cfg,
		log:        log,
		lock:       lock,
		db:         db,
		mesh:       node,
		metrics:    met,
		ln:         ln,
		cancelReqs: cancelReqs,
		cancelBg:   cancelBg,
		served:     make(chan error, 1),
		adminToken: token,
		srv: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			// A whole request, body included, on the slowest link waited
			// for (internal/web cuts each body off by its own size first).
			// net/http lifts it once the body is read, so the push stream
			// and waiting claims, which only write, are not cut.
			ReadTimeout: web.BodyReadTime(web.DefaultMaxBodyBytes) + 10*time.Second,
			IdleTimeout: 2 * time.Minute,
			BaseContext: func(net.Listener) context.Context { return reqCtx },
			// A waiting claim asks whether its caller closed the connection
			// behind a pipelined byte (which net/http stops watching).
			ConnContext: web.ConnContext,
			ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() { r.served <- r.srv.Serve(ln) }()
	r.wg.Add(1)
	go r.sweep(bg)
	if err := r.startWorkers(bg, opts); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return nil, errors.Join(err, r.Shutdown(sctx))
	}
	if err := writeRunFile(cfg.DataDir, newRunInfo(r, opts)); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return nil, errors.Join(err, r.Shutdown(sctx))
	}
	return r, nil
}

// startWorkers starts the worker manager: it first recovers runs a crash
// interrupted, then runs a loop per enabled worker.
func (r *Relay) startWorkers(ctx context.Context, opts StartOptions) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("workers: find our own binary, which starts sandboxed runs: %w", err)
	}
	box := sandbox.Wrapper{Self: self, Protected: []string{r.cfg.DataDir}, Homes: filepath.Join(r.cfg.DataDir, "cli-homes"),
		Settings: harness.RunSettings}
	pinUnpinned(ctx, r.db, r.log)
	m, err := worker.NewManager(worker.Options{
		Protected: []string{r.cfg.DataDir},
		Sandbox:   box.Wrap,
		Relay:     r.db,
		Harness:   newHarnessAdapter(),
		Tracker:   watch.Tracker{},
		Sessions:  r.Services.Workers.turns(),
		RunRoot:   filepath.Join(r.cfg.DataDir, "runs"),
		MCPURL:    r.cfg.MCPURL(),
		Logger:    r.log,
		OnStatus: func(s relay.WorkerStatus) {
			r.metrics.WorkerStatus(s)
			r.db.Publish(relay.Change{Type: relay.ChangeWorker, Worker: &s})
		},
		// A deleted worker's (or agent's) CLI homes go with it.
		OnRemoved:    box.RemoveHome,
		MinuteLength: opts.WorkerMinute,
		Secrets:      []string{r.adminToken},
	})
	if err != nil {
		return fmt.Errorf("workers: %w", err)
	}
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	// Before the services can set up workers (setManager).
	r.pruneHomes(ctx, box)
	r.workers = m
	r.Services.Workers.setManager(m)
	return nil
}

// pruneHomes removes the CLI homes of the agents that have no worker: left
// by a relay from before they went with their worker, or by a removal that
// failed. Failures are logged: the next start tries again.
func (r *Relay) pruneHomes(ctx context.Context, box sandbox.Wrapper) {
	ents, _ := os.ReadDir(box.Homes)
	if len(ents) == 0 {
		return // none yet (or unreadable, which the runs will say)
	}
	workers, err := r.db.ListWorkers(ctx)
	if err != nil {
		r.log.Error("workers: list them to prune the CLI homes", "err", err)
		return
	}
	for _, e := range ents {
		if slices.ContainsFunc(workers, func(w relay.WorkerConfig) bool { return w.AgentSlug == e.Name() }) {
			continue
		}
		if err := box.RemoveHome(e.Name()); err != nil {
			r.log.Error("workers: prune the CLI homes", "agent", e.Name(), "err", err)
		}
	}
}

// Addr is the address the relay listens on (useful with port 0).
func (r *Relay) Addr() net.Addr { return r.ln.Addr() }

// listening names the addresses the relay listens on, as the banner says
// them: both loopback addresses for the default host ("127.0.0.1:4318 and
// [::1]:4318"), else its configured address.
func (r *Relay) listening() string {
	if p, ok := r.ln.(*pairListener); ok {
		return p.first.Addr().String() + " and " + p.second.Addr().String()
	}
	return r.cfg.Addr()
}

// Service is the relay's domain service.
func (r *Relay) Service() relay.Service { return r.db }

// Done receives the error that stopped the HTTP server unexpectedly.
func (r *Relay) Done() <-chan error { return r.served }

func (r *Relay) sweep(ctx context.Context) {
	defer r.wg.Done()
	tick.Every(ctx, SweepInterval, func() {
		res, err := r.db.Sweep(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("maintenance sweep failed", "err", err)
			}
			return
		}
		if res.Requeued > 0 || res.Pruned > 0 || res.PrunedInvites > 0 || res.PrunedActivity > 0 {
			r.log.Info("maintenance sweep", "requeued", res.Requeued, "pruned", res.Pruned,
				"prunedInvites", res.PrunedInvites, "prunedActivity", res.PrunedActivity)
		}
		r.pruneRuns()
	})
}

// pruneRuns deletes run folders left behind for longer than the retention
// period (at least a day and an hour: no run lasts longer than a day).
func (r *Relay) pruneRuns() {
	running := map[string]bool{}
	if r.workers != nil {
		for _, st := range r.workers.Statuses() {
			if st.CurrentTask != nil {
				running[st.CurrentTask.ID] = true
			}
		}
	}
	keep := max(time.Duration(r.cfg.TaskRetentionDays*float64(24*time.Hour)), 25*time.Hour)
	n, err := pruneRunFolders(filepath.Join(r.cfg.DataDir, "runs"), keep, time.Now(), running)
	if err != nil {
		r.log.Error("maintenance sweep: run folders", "err", err)
	}
	if n > 0 {
		r.log.Info("maintenance sweep", "runFoldersRemoved", n)
	}
}

// WorkerStopTimeout is how long Shutdown gives the running workers to stop
// their CLIs (SIGTERM, then SIGKILL after the kill grace) and put their
// tasks back in the queue. It is its own deadline: a slow HTTP client that
// holds up draining must not leave a task claimed for a whole lease.
const WorkerStopTimeout = 20 * time.Second

// Shutdown stops accepting connections, wakes long-polls so they answer at
// once and waits for requests in flight (up to ctx); meanwhile it stops the
// workers on their own deadline (WorkerStopTimeout), which puts every
// claimed task of a stopped run back in the queue. Only then does it stop
// the sweep and close the database, and last removes the run file and
// releases the data folder's lock.
func (r *Relay) Shutdown(ctx context.Context) error {
	workersDone := make(chan error, 1)
	go func() {
		if r.workers == nil {
			workersDone <- nil
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WorkerStopTimeout)
		defer cancel()
		workersDone <- r.workers.Stop(wctx)
	}()
	shut := make(chan error, 1)
	go func() { shut <- r.srv.Shutdown(ctx) }()
	// Shutdown has closed the listener; end waiting claims so they return idle.
	r.cancelReqs()
	errHTTP := <-shut
	if errors.Is(errHTTP, context.DeadlineExceeded) {
		errHTTP = r.srv.Close()
	}
	errWorkers := <-workersDone
	r.cancelBg()
	r.wg.Wait()
	if r.mesh != nil {
		r.Services.Mesh.setNode(nil)
		r.mesh.Close()
	}
	errDB := r.db.Close()
	errRun := removeRunFile(r.cfg.DataDir)
	return errors.Join(errHTTP, errWorkers, errDB, errRun, r.lock.Unlock())
}

// Config is the configuration the relay runs with (the actual port when 0 was asked).
func (r *Relay) Config() config.Config { return r.cfg }
