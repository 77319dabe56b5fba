package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/config"
)

// Options is one `crosschat-relay bench`, its flags read and checked.
type Options struct {
	// Bench is the load: agents, tasks, phases, timeout. With its URL set
	// (and its Peer, for two running relays in one mesh) Run measures that
	// relay as it is; otherwise Run starts the relays and fills in where
	// they are and how to sample them. Its Progress is set to Stderr.
	Bench bench.Options
	// Version is the version a relay started inside this process reports.
	Version string
	// DataParent is the folder the temporary data folders are made in ("":
	// the system temp folder).
	DataParent string
	// Tmpfs is the folder of the second child relay of each round, where
	// fsync is free ("": no second relay).
	Tmpfs string
	// Rounds is how many times the child relays are measured, interleaved,
	// at least 1; with more than 1 the report ends with the medians.
	Rounds int
	// InProcess runs one relay inside this process instead of child
	// relays (one run, no CPU or commit figures).
	InProcess bool
	// Mesh measures two child relays in one mesh instead.
	Mesh bool
	// ProfileDir, when set, is an existing folder each child relay writes
	// its CPU profile of the lifecycle phase into (relay-disk-N.pprof,
	// relay-tmpfs-N.pprof).
	ProfileDir string
	// JSON writes the report as JSON instead of text.
	JSON bool
	// Stdout gets the report; Stderr the progress lines and the relays'
	// warnings.
	Stdout, Stderr io.Writer
}

// Run measures what o says (a running relay, one started in this process,
// child relays on the disk and on tmpfs, or a mesh of two) and writes the
// report to o.Stdout. It stops the relays it started and removes their data
// folders before it returns; ctx ending stops the measurement.
func Run(ctx context.Context, o Options) error {
	o.Bench.Progress = o.Stderr
	var (
		rep *bench.Report
		err error
	)
	switch {
	case o.Bench.URL != "":
		rep, err = bench.Run(ctx, o.Bench)
	case o.InProcess:
		rep, err = benchInProcess(ctx, o.Bench, o.DataParent, o.Version, o.Stderr)
	case o.Mesh:
		return benchMesh(ctx, o.Bench, o.DataParent, o.Rounds, o.JSON, o.Stdout, o.Stderr)
	default:
		return benchChildren(ctx, o.Bench, o.DataParent, o.Tmpfs, o.Rounds, o.ProfileDir, o.JSON, o.Stdout, o.Stderr)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return rep.WriteJSON(o.Stdout)
	}
	return rep.WriteText(o.Stdout)
}

// inBenchDir runs run in a new temporary data dir made in parent (or the
// system temp dir) and removes the dir after.
func inBenchDir(parent string, run func(dir string) (*bench.Report, error)) (rep *bench.Report, err error) {
	dir, err := os.MkdirTemp(parent, "crosschat-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp data dir: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", dir, rmErr))
		}
	}()
	return run(dir)
}

// benchInProcess starts a relay in a temporary data directory (in parent,
// or the system temp dir) on a random loopback port, runs the bench against it, and removes everything after.
func benchInProcess(ctx context.Context, o bench.Options, parent, version string, stderr io.Writer) (*bench.Report, error) {
	return inBenchDir(parent, func(dir string) (*bench.Report, error) {
		return benchRelayIn(ctx, o, dir, version, stderr)
	})
}

// benchRelayIn starts a relay with its data in dir, runs the bench against
// it and shuts it down.
func benchRelayIn(ctx context.Context, o bench.Options, dir, version string, stderr io.Writer) (rep *bench.Report, err error) {
	cfg, err := benchConfig(dir)
	if err != nil {
		return nil, err
	}
	// Relay logs below warnings would interleave with the progress lines.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t0 := time.Now()
	r, err := app.Start(cfg, app.StartOptions{Version: version, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("bench: start relay: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if shErr := r.Shutdown(sctx); shErr != nil {
			err = errors.Join(err, fmt.Errorf("bench: shut the relay down: %w", shErr))
		}
	}()
	o.URL = "http://" + r.Addr().String()
	c := bench.NewClient(o.URL, 2)
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = c.WaitHealthy(hctx)
	cancel()
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	o.Startup = time.Since(t0)
	if o.AdminToken, err = cfg.AdminToken(false); err != nil {
		return nil, fmt.Errorf("bench: admin token: %w", err)
	}
	o.Service = r.Service()
	o.InProcess = true
	o.FloorDir = dir
	return bench.Run(ctx, o)
}

// benchConfig is a serve configuration for dir on a random loopback port,
// independent of the CROSSCHAT_* environment and any .env file, with the
// serve flags extra (a bench relay of a mesh).
func benchConfig(dir string, extra ...string) (config.Config, error) {
	var cfg config.Config
	noEnv := func(string) (string, bool) { return "", false }
	fs := cfg.NewFlagSet("bench", noEnv, true, io.Discard)
	if err := fs.Parse(append([]string{"--host", "127.0.0.1", "--port", "1", "--data-dir", dir}, extra...)); err != nil {
		return cfg, fmt.Errorf("bench: relay config: %w", err)
	}
	if err := cfg.Finish(); err != nil {
		return cfg, fmt.Errorf("bench: relay config: %w", err)
	}
	cfg.Port = 0 // Finish wants a real port; listen on any free one
	return cfg, nil
}
