package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/loopback"
)

// maxLogSize is the size past which the log file is rotated at start-up.
const maxLogSize = 5 << 20

// Env is the process environment. No command reads a .env file by
// itself: a cloned repository's .env must not redirect the admin token or
// reconfigure the relay. serve and the window read one only when named
// with --env-file.
func Env() (config.Env, error) {
	return os.LookupEnv, nil
}

// parseServe parses the serve (and desktop) flags; -h or --help prints
// the help on stdout and returns flag.ErrHelp.
// CheckArgs reports what is wrong with the flags of the serve or desktop
// command name, without acting on them (nil when they parse).
func CheckArgs(name string, args []string) error {
	_, err := parseServe(name, args, io.Discard)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func parseServe(name string, args []string, stdout io.Writer) (config.Config, error) {
	env, err := Env()
	if err != nil {
		return config.Config{}, err
	}
	if path, ok := config.EnvFileArg(args); ok {
		if env, err = config.WithDotEnv(env, path); err != nil {
			return config.Config{}, err
		}
	}
	var cfg config.Config
	fs := cfg.NewFlagSet(name, env, true, io.Discard)
	fs.String(config.EnvFileFlag, "", "read CROSSCHAT_* settings from this .env file (the environment and flags win over it)")
	fs.Usage = func() {}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		serveHelp(stdout, name, fs)
		return cfg, err
	} else if err != nil {
		return cfg, config.FlagError(fs, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.Finish()
}

// serveHelp prints the help of serve (or of the window, name "desktop").
func serveHelp(w io.Writer, name string, fs *flag.FlagSet) {
	// The first line as every verb's help has it (app/cli's verbs table
	// holds the same summary; its help test compares them).
	title, usage, what, example := "crosschat-relay serve: run the relay without a window; the dashboard is served at /",
		"crosschat-relay serve [flags]", " without a window (servers, containers, CI); the dashboard is served to browsers at /",
		"crosschat-relay serve --port 4319 --data-dir ~/relay-b"
	if name != "serve" {
		title, usage, what, example = "crosschat-relay: the relay in the desktop app's window", "crosschat-relay [--hidden] [flags]", " in the desktop app's window", "crosschat-relay --hidden"
	}
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n\nRuns the relay%s.\nFlags win over CROSSCHAT_* environment variables, which win over the file named with --env-file (no .env file is read otherwise).\n\nFlags:\n", title, usage, what)
	fs.VisitAll(func(f *flag.Flag) {
		if name == "serve" && f.Name == "hidden" {
			return // the window's flag, which serve takes and ignores
		}
		config.WriteFlag(w, f)
	})
	fmt.Fprintf(w, "\nExample:\n  %s\n", example)
}

// openLog returns a logger writing to stderr and, when path is set, to the
// log file (rotated to <path>.1 whenever it would pass 5 MB).
func openLog(path string, stderr io.Writer) (*slog.Logger, io.Closer, error) {
	if path == "" {
		return slog.New(slog.NewTextHandler(stderr, nil)), io.NopCloser(nil), nil
	}
	f, err := openRotating(path, maxLogSize)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewTextHandler(io.MultiWriter(stderr, f), nil)), f, nil
}

// LogPath is the log file of cfg: --log-file, or crosschat-relay.log in
// the data folder; "none" writes no file.
func LogPath(cfg config.Config) string {
	switch cfg.LogFile {
	case "none":
		return ""
	case "":
		return filepath.Join(cfg.DataDir, LogFileName)
	}
	return cfg.LogFile
}

// Prepare parses the flags of the serve or desktop command and opens the
// log. When it cannot go on, closer is nil and code is the exit code (0 for
// --help, 2 for bad flags, 1 for a log file that cannot be opened).
func Prepare(name string, args []string, stdout, stderr io.Writer) (cfg config.Config, log *slog.Logger, closer io.Closer, code int) {
	prefix := "crosschat-relay " + name + ":"
	cfg, err := parseServe(name, args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return cfg, nil, nil, 0
	}
	if err != nil {
		fmt.Fprintln(stderr, prefix, err)
		return cfg, nil, nil, 2
	}
	if err := ensureDataDir(cfg); err != nil {
		fmt.Fprintln(stderr, prefix, err)
		return cfg, nil, nil, 1
	}
	log, closer, err = openLog(LogPath(cfg), stderr)
	if err != nil {
		fmt.Fprintln(stderr, prefix, err)
		return cfg, nil, nil, 1
	}
	return cfg, log, closer, 0
}

// Serve runs `crosschat-relay serve` until SIGINT or SIGTERM.
func Serve(args []string, assets fs.FS, version string, stdout, stderr io.Writer) int {
	cfg, log, closer, code := Prepare("serve", args, stdout, stderr)
	if closer == nil {
		return code
	}
	defer closer.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := Start(cfg, StartOptions{Version: version, Assets: assets, Logger: log})
	if errors.Is(err, ErrAlreadyRunning) {
		// Nothing failed: said here, not in the running relay's log.
		fmt.Fprintln(stderr, "crosschat-relay serve:", err)
		return 1
	}
	if err != nil {
		log.Error("start failed", "err", err)
		return 1
	}
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	r.Services.System.setQuit(quit)
	printBanner(stdout, r.Config(), version, r.listening())
	log.Info("relay started", "version", version, "dashboard", r.Config().BaseURL(), "data", cfg.DataDir, "pid", os.Getpid())
	code = 0
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-r.Done():
		log.Error("http server stopped", "err", err)
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(sctx); err != nil {
		log.Error("shutdown", "err", err)
		code = 1
	}
	return code
}

// printBanner prints where the relay is: its URLs, data folder and admin
// token, and listening, the addresses it listens on.
func printBanner(w io.Writer, cfg config.Config, version, listening string) {
	fmt.Fprintf(w, "Crosschat Relay %s\n", version)
	fmt.Fprintf(w, "  Dashboard  %s/\n", cfg.BaseURL())
	fmt.Fprintf(w, "  MCP        %s\n", cfg.MCPURL())
	fmt.Fprintf(w, "  Data       %s\n", cfg.DataDir)
	if cfg.APIToken != "" {
		fmt.Fprintf(w, "  Admin token from %s\n", config.EnvAPIToken)
	} else {
		fmt.Fprintf(w, "  Admin token in %s (print it with `crosschat-relay token%s`)\n", cfg.TokenPath(), locationArgs(cfg))
	}
	if cliReaches(cfg) {
		fmt.Fprintf(w, "  Listening on %s (stop with Ctrl+C or `crosschat-relay quit%s`)\n", listening, locationArgs(cfg))
	} else {
		// The verbs send the admin token over plain HTTP to loopback only.
		fmt.Fprintf(w, "  Listening on %s (stop with Ctrl+C)\n", listening)
	}
}

// cliReaches reports whether the CLI's verbs reach the relay of cfg on this
// computer: it listens on loopback or on every address. One other address
// alone (a LAN address) is another computer's to them, and the admin token
// goes there only over https.
func cliReaches(cfg config.Config) bool {
	return loopback.Everywhere(cfg.Host) || loopback.Host(cfg.Host)
}

// locationArgs are the flags a CLI verb needs to reach this relay: its
// --port and --data-dir where they are not the defaults a verb takes, so
// the banner of a second relay never names a command that acts on the
// first. With --port, a verb asks that port on its --host (127.0.0.1 by
// default, which reaches a relay on every address too) rather than the
// address the data folder's run file names, so a relay on another loopback
// address (127.0.0.2, ::1) is named with its --host as well; one on a LAN
// address is no verb's to reach over plain HTTP (cliReaches).
func locationArgs(cfg config.Config) string {
	var b strings.Builder
	if cfg.Port != config.DefaultPort {
		// A relay on the default loopback host, in any spelling, holds
		// 127.0.0.1 too, where the verbs ask; another loopback address
		// is named.
		if _, twin := twinLoopback(cfg.Host); !twin && loopback.Host(cfg.Host) {
			b.WriteString(" --host " + shellWord(cfg.Host))
		}
		fmt.Fprintf(&b, " --port %d", cfg.Port)
	}
	if filepath.Clean(cfg.DataDir) != filepath.Clean(config.DefaultDataDir(os.LookupEnv)) {
		b.WriteString(" --data-dir " + shellWord(cfg.DataDir))
	}
	return b.String()
}

// shellWord is s as one word of a shell command: as it is when it holds
// only characters no shell treats specially, else in single quotes.
func shellWord(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
