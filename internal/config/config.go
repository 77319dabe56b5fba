// Package config resolves the relay's settings from command-line flags, the
// environment, a .env file named with --env-file (serve and the window
// only) and defaults, in that order of precedence.
//
// It imports only the standard library and internal/relay.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/loopback"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Defaults.
const (
	DefaultHost = "127.0.0.1"
	DefaultPort = 4318
	TokenFile   = "api-token"
	// MinTokenLen is the shortest admin token accepted from the
	// environment on any address: failed guesses are rate-limited, but a
	// short token would still fall to a patient guesser.
	MinTokenLen = 24
	// MinRemoteTokenLen is the shortest admin token accepted from the
	// environment when the relay listens beyond loopback.
	MinRemoteTokenLen = 32
	DatabaseFile      = "relay.db"
)

// Config is everything `serve` and the desktop app need to start the relay.
type Config struct {
	Host              string
	Port              int
	DataDir           string
	AllowedHosts      []string
	AllowedOrigins    []string
	OperatorSlug      string
	TaskRetentionDays float64
	LogFile           string
	// APIToken is the admin token from CROSSCHAT_API_TOKEN; empty means the
	// token file in DataDir (generated when missing).
	APIToken string
	// Hidden starts the desktop app without a window.
	Hidden bool
	// Mesh joins other relays over NATS JetStream (docs/mesh.md).
	Mesh Mesh
	// PublicURL is the address agents elsewhere reach the relay at (a proxy,
	// a LAN name); when set, invites and setup snippets name it. See publicurl.go.
	PublicURL string

	envErrs []error
}

// Env looks up environment variables; os.LookupEnv in production.
type Env func(key string) (string, bool)

// Environment variable names.
const (
	EnvHost           = "CROSSCHAT_HOST"
	EnvPort           = "CROSSCHAT_PORT"
	EnvDataDir        = "CROSSCHAT_DATA_DIR"
	EnvAllowedHosts   = "CROSSCHAT_ALLOWED_HOSTS"
	EnvAllowedOrigins = "CROSSCHAT_ALLOWED_ORIGINS"
	EnvOperatorSlug   = "CROSSCHAT_OPERATOR_SLUG"
	EnvRetentionDays  = "CROSSCHAT_TASK_RETENTION_DAYS"
	EnvLogFile        = "CROSSCHAT_LOG_FILE"
	EnvAPIToken       = "CROSSCHAT_API_TOKEN"
	EnvPublicURL      = "CROSSCHAT_PUBLIC_URL"
)

// EnvPrefix begins the name of every variable the relay reads.
const EnvPrefix = "CROSSCHAT_"

// WithoutRelayEnv returns environ (KEY=VALUE entries, as os.Environ gives
// them) without the relay's own variables, so a child relay started with it
// takes none of this process's settings.
func WithoutRelayEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, EnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

// WithDotEnv returns an Env that consults base first and then the KEY=VALUE
// lines of the file at path, so the file never overrides the real
// environment. The file was named by the user: a missing one is an error.
func WithDotEnv(base Env, path string) (Env, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--env-file: %w", err)
	}
	vals, err := ReadDotEnv(path)
	if err != nil {
		return nil, err
	}
	return func(k string) (string, bool) {
		if v, ok := base(k); ok {
			return v, true
		}
		v, ok := vals[k]
		return v, ok
	}, nil
}

// ReadDotEnv parses a .env file: KEY=VALUE lines, optional "export ",
// comments starting with #, and single or double quotes around values. A
// missing file is not an error.
func ReadDotEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	vals := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			// The line itself is not quoted: it may hold a secret.
			return nil, fmt.Errorf("%s:%d: expected KEY=VALUE", path, i+1)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vals[strings.TrimSpace(k)] = v
	}
	return vals, nil
}

// DefaultDataDir is the per-user data directory: $XDG_DATA_HOME/crosschat-relay
// (~/.local/share/crosschat-relay) on Linux, ~/Library/Application
// Support/crosschat-relay on macOS and %LOCALAPPDATA%\crosschat-relay on Windows.
func DefaultDataDir(env Env) string {
	home, _ := os.UserHomeDir()
	switch runtime.GOOS {
	case "windows":
		if v, ok := env("LOCALAPPDATA"); ok && v != "" {
			return filepath.Join(v, "crosschat-relay")
		}
		return filepath.Join(home, "AppData", "Local", "crosschat-relay")
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", "crosschat-relay")
	default:
		if v, ok := env("XDG_DATA_HOME"); ok && v != "" {
			return filepath.Join(v, "crosschat-relay")
		}
		return filepath.Join(home, ".local", "share", "crosschat-relay")
	}
}

// locationFlags registers the location flags shared by every command (host, port,
// data dir) on fs, with defaults resolved from env: for the relay itself
// (serve) where it listens, for the other commands where the relay is.
func (c *Config) locationFlags(fs *flag.FlagSet, env Env, serve bool) {
	host, port, data := "the relay's address (env "+EnvHost+")", "the relay's port (env "+EnvPort+")",
		"the relay's data folder, whose api-token this command uses (env "+EnvDataDir+")"
	if serve {
		host, port, data = "address to listen on (env "+EnvHost+")", "port to listen on (env "+EnvPort+")",
			"folder for relay.db and api-token (env "+EnvDataDir+")"
	}
	fs.StringVar(&c.Host, "host", envOr(env, EnvHost, DefaultHost), host)
	fs.IntVar(&c.Port, "port", c.envInt(env, EnvPort, DefaultPort), port)
	fs.StringVar(&c.DataDir, "data-dir", envOr(env, EnvDataDir, DefaultDataDir(env)), data)
}

// NewFlagSet returns a flag set for command name that fills c from flags,
// falling back to env and defaults. full adds the serve-only flags.
func (c *Config) NewFlagSet(name string, env Env, full bool, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	c.locationFlags(fs, env, full)
	c.APIToken = strings.TrimSpace(envOr(env, EnvAPIToken, ""))
	if !full {
		return fs
	}
	fs.Func("allowed-hosts", "comma-separated Host names accepted besides localhost, 127.0.0.1 and [::1]; required when --host is not loopback (env "+EnvAllowedHosts+")", func(s string) error {
		c.AllowedHosts = splitList(s)
		return nil
	})
	c.AllowedHosts = splitList(envOr(env, EnvAllowedHosts, ""))
	fs.Func("allowed-origins", "comma-separated Origin host names accepted by the browser routes; default: the allowed hosts (env "+EnvAllowedOrigins+")", func(s string) error {
		c.AllowedOrigins = splitList(s)
		return nil
	})
	c.AllowedOrigins = splitList(envOr(env, EnvAllowedOrigins, ""))
	fs.StringVar(&c.OperatorSlug, "operator-slug", envOr(env, EnvOperatorSlug, relay.DefaultOperatorSlug), "slug of the human operator (env "+EnvOperatorSlug+")")
	fs.Float64Var(&c.TaskRetentionDays, "task-retention-days", c.envFloat(env, EnvRetentionDays, relay.DefaultRetentionDays), "days to keep completed and cancelled tasks; fractions allowed (env "+EnvRetentionDays+")")
	fs.StringVar(&c.LogFile, "log-file", envOr(env, EnvLogFile, ""), "append logs to this file as well as stderr; default crosschat-relay.log in the data folder, \"none\" for no file (env "+EnvLogFile+")")
	fs.BoolVar(&c.Hidden, "hidden", false, "start the desktop app without showing its window")
	c.meshFlags(fs, env)
	fs.StringVar(&c.PublicURL, "public-url", envOr(env, EnvPublicURL, ""), "the address agents reach the relay at, e.g. https://relay.example.com, named in invites and setup snippets; default: the address each caller reached (env "+EnvPublicURL+")")
	return fs
}

// Finish validates c after parsing and fills derived values: allowed hosts
// and origins, an absolute data dir, the normalized operator slug.
func (c *Config) Finish() error {
	if err := errors.Join(c.envErrs...); err != nil {
		return err
	}
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("--port: must be 1..65535, got %d", c.Port)
	}
	if err := c.Mesh.finish(); err != nil {
		return err
	}
	if c.TaskRetentionDays <= 0 {
		return fmt.Errorf("--task-retention-days: must be a positive number, got %v", c.TaskRetentionDays)
	}
	slug, err := relay.NormalizeSlug("--operator-slug", c.OperatorSlug)
	if err != nil {
		return errors.New(relay.ErrorMessage(err))
	}
	c.OperatorSlug = slug
	if c.DataDir == "" {
		return errors.New("--data-dir: must not be empty")
	}
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	if !loopback.Host(c.Host) && len(c.AllowedHosts) == 0 {
		return fmt.Errorf("--host %s is not a loopback address: name the host names clients will use with --allowed-hosts (or %s)", c.Host, EnvAllowedHosts)
	}
	if c.APIToken != "" && len(c.APIToken) < MinTokenLen {
		return fmt.Errorf("%s is %d characters: an admin token must be at least %d random characters (or unset it to use the generated one, see `crosschat-relay token`)", EnvAPIToken, len(c.APIToken), MinTokenLen)
	}
	if !loopback.Host(c.Host) && c.APIToken != "" && len(c.APIToken) < MinRemoteTokenLen {
		return fmt.Errorf("%s is %d characters: a relay listening beyond loopback (--host %s) needs an admin token of at least %d random characters (or unset it to use the generated one)", EnvAPIToken, len(c.APIToken), c.Host, MinRemoteTokenLen)
	}
	if len(c.AllowedOrigins) == 0 {
		c.AllowedOrigins = append([]string(nil), c.AllowedHosts...)
	}
	c.AllowedHosts = withLoopback(c.AllowedHosts, c.Host)
	c.AllowedOrigins = withLoopback(c.AllowedOrigins, c.Host)
	if c.PublicURL, err = NormalizePublicURL(c.PublicURL); err != nil {
		return err
	}
	return nil
}

// Addr is the listen address, its host as loopback.Canonical spells it
// (no brackets, lower case), so a verb dials any spelling a flag gave.
func (c Config) Addr() string {
	return net.JoinHostPort(loopback.Canonical(c.Host), strconv.Itoa(c.Port))
}

// BaseURL is the URL clients on this computer use to reach the relay.
func (c Config) BaseURL() string {
	h := c.Host
	if name := loopback.Canonical(h); name == "127.0.0.1" || name == "::1" || name == "localhost" || loopback.Everywhere(h) {
		h = "localhost"
	}
	return "http://" + net.JoinHostPort(strings.Trim(h, "[]"), strconv.Itoa(c.Port))
}

// MCPURL is the MCP endpoint for clients on this computer.
func (c Config) MCPURL() string { return c.BaseURL() + "/mcp" }

// DatabasePath is the SQLite file.
func (c Config) DatabasePath() string { return filepath.Join(c.DataDir, DatabaseFile) }

// TokenPath is the admin token file.
func (c Config) TokenPath() string { return filepath.Join(c.DataDir, TokenFile) }

// withLoopback is list with the loopback names added: localhost, 127.0.0.1
// and [::1], and host, the relay's own listen address, when it is another
// loopback address (127.0.0.2, say: its banner and BaseURL name it).
func withLoopback(list []string, host string) []string {
	out := append([]string(nil), list...)
	names := []string{"localhost", "127.0.0.1", "[::1]"}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && a.IsLoopback() {
		own := a.String()
		if a.Is6() {
			own = "[" + own + "]"
		}
		names = append(names, own)
	}
	for _, l := range names {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func envOr(env Env, k, def string) string {
	if v, ok := env(k); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

func (c *Config) envInt(env Env, k string, def int) int {
	if v, ok := env(k); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not a whole number", k, v))
			return def
		}
		return n
	}
	return def
}

func (c *Config) envFloat(env Env, k string, def float64) float64 {
	if v, ok := env(k); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not a number", k, v))
			return def
		}
		return n
	}
	return def
}

// EnvFileFlag is the flag of serve and the window app that names a .env file.
const EnvFileFlag = "env-file"

// EnvFileArg finds --env-file PATH (or --env-file=PATH, one dash or two) in
// args before they are parsed: the file supplies the flags' defaults, so it
// is read first. It stops at "--".
func EnvFileArg(args []string) (path string, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name := strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(name, EnvFileFlag+"="); ok {
			path, found = v, true
			continue
		}
		if name == EnvFileFlag && i+1 < len(args) {
			path, found = args[i+1], true
			i++
		}
	}
	return path, found
}
