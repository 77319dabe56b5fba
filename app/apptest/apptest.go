// Package apptest starts real relays in-process for tests: app.Start with
// the SQLite file in a temp folder and HTTP on a random loopback port,
// stopped when the test ends; and runs CLI verbs in-process. Only tests
// import it (TestImportRules).
package apptest

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/config"
)

// Config is a test relay's configuration on dataDir: loopback, a random
// port, the operator "operator" and 30 days' retention.
func Config(dataDir string) config.Config {
	return config.Config{
		Host:              "127.0.0.1",
		Port:              0,
		DataDir:           dataDir,
		OperatorSlug:      "operator",
		TaskRetentionDays: 30,
		AllowedHosts:      []string{"localhost", "127.0.0.1", "[::1]"},
		AllowedOrigins:    []string{"localhost", "127.0.0.1", "[::1]"},
	}
}

// Start starts a relay with cfg and stops it when tb ends; a relay that
// does not start, or does not stop within 20 s, fails tb.
func Start(tb testing.TB, cfg config.Config, opts app.StartOptions) *app.Relay {
	tb.Helper()
	r, err := app.Start(cfg, opts)
	if err != nil {
		tb.Fatalf("start relay: %v", err)
	}
	tb.Cleanup(func() { Stop(tb, r) })
	return r
}

// Stop shuts r down, failing tb when it does not stop cleanly within 20 s.
func Stop(tb testing.TB, r *app.Relay) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		tb.Errorf("shut the relay down: %v", err)
	}
}

// Relay starts a relay with Config on a data folder in tb's temp folder,
// changed by opts, and stops it when tb ends.
func Relay(tb testing.TB, opts ...func(*config.Config)) *app.Relay {
	tb.Helper()
	cfg := Config(filepath.Join(tb.TempDir(), "data"))
	for _, o := range opts {
		o(&cfg)
	}
	return Start(tb, cfg, app.StartOptions{Version: "test"})
}

// Command runs the CLI verb args in this process, as version "test", and
// returns what it printed and its exit code.
func Command(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = cli.Command(args, "test", &out, &errb)
	return out.String(), errb.String(), code
}
