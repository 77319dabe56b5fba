package config_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

func mapEnv(m map[string]string) config.Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func load(t *testing.T, env config.Env, args ...string) (config.Config, error) {
	t.Helper()
	var c config.Config
	fs := c.NewFlagSet("serve", env, true, io.Discard)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.Finish()
}

// Ensure flags win over the environment, the environment over .env, and .env over defaults.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	dot := filepath.Join(dir, ".env")
	if err := os.WriteFile(dot, []byte("# comment\nCROSSCHAT_PORT=5001\nexport CROSSCHAT_OPERATOR_SLUG='Boss'\nCROSSCHAT_TASK_RETENTION_DAYS=\"0.5\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantPort int
		wantOp   string
		wantRet  float64
	}{
		{"dotenv", map[string]string{}, nil, 5001, "boss", 0.5},
		{"env beats dotenv", map[string]string{"CROSSCHAT_PORT": "5002"}, nil, 5002, "boss", 0.5},
		{"flag beats env", map[string]string{"CROSSCHAT_PORT": "5002"}, []string{"--port", "5003", "--operator-slug", "me"}, 5003, "me", 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := config.WithDotEnv(mapEnv(tt.env), dot)
			if err != nil {
				t.Fatal(err)
			}
			c, err := load(t, env, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if c.Port != tt.wantPort || c.OperatorSlug != tt.wantOp || c.TaskRetentionDays != tt.wantRet {
				t.Fatalf("got port=%d op=%q ret=%v, want %d %q %v", c.Port, c.OperatorSlug, c.TaskRetentionDays, tt.wantPort, tt.wantOp, tt.wantRet)
			}
		})
	}
}

// Ensure a relay on another loopback address accepts its own address as a
// Host and an Origin, as its banner's URLs name it; a LAN address is only
// what --allowed-hosts names, with the loopback names.
func TestOwnLoopbackHostAllowed(t *testing.T) {
	env := mapEnv(map[string]string{"XDG_DATA_HOME": "/tmp/xdg"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--host", "127.0.0.2"}, "localhost,127.0.0.1,[::1],127.0.0.2"},
		{[]string{"--host", "::1"}, "localhost,127.0.0.1,[::1]"},
		{[]string{"--host", "localhost"}, "localhost,127.0.0.1,[::1]"},
		{[]string{"--host", "0.0.0.0", "--allowed-hosts", "relay.lan"}, "relay.lan,localhost,127.0.0.1,[::1]"},
		{[]string{"--host", "192.168.1.5", "--allowed-hosts", "relay.lan"}, "relay.lan,localhost,127.0.0.1,[::1]"},
	} {
		c, err := load(t, env, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := strings.Join(c.AllowedHosts, ","); got != tc.want {
			t.Errorf("%v: allowed hosts %q, want %q", tc.args, got, tc.want)
		}
		if got := strings.Join(c.AllowedOrigins, ","); got != tc.want {
			t.Errorf("%v: allowed origins %q, want %q", tc.args, got, tc.want)
		}
	}
}

// Ensure defaults are loopback on 4318 with the loopback names allowed.
func TestDefaults(t *testing.T) {
	c, err := load(t, mapEnv(map[string]string{"XDG_DATA_HOME": "/tmp/xdg"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr() != "127.0.0.1:4318" {
		t.Fatalf("addr %q", c.Addr())
	}
	if got := strings.Join(c.AllowedHosts, ","); got != "localhost,127.0.0.1,[::1]" {
		t.Fatalf("allowed hosts %q", got)
	}
	if c.MCPURL() != "http://localhost:4318/mcp" {
		t.Fatalf("mcp url %q", c.MCPURL())
	}
	if c.TaskRetentionDays != 30 || c.OperatorSlug != "operator" {
		t.Fatalf("defaults %+v", c)
	}
}

// Ensure bad input is refused with a message naming what is wrong.
func TestInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"non-loopback without allowed hosts", nil, []string{"--host", "0.0.0.0"}, "--allowed-hosts"},
		{"port range", nil, []string{"--port", "70000"}, "--port"},
		{"bad env port", map[string]string{"CROSSCHAT_PORT": "abc"}, nil, "CROSSCHAT_PORT"},
		{"bad operator slug", nil, []string{"--operator-slug", "a b"}, "--operator-slug"},
		{"retention", nil, []string{"--task-retention-days", "0"}, "retention"},
		{"unknown flag", nil, []string{"--nope"}, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, mapEnv(tt.env), tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	c, err := load(t, mapEnv(nil), "--host", "0.0.0.0", "--allowed-hosts", "Relay.Example")
	if err != nil {
		t.Fatal(err)
	}
	if c.AllowedHosts[0] != "relay.example" || c.AllowedOrigins[0] != "relay.example" {
		t.Fatalf("allowed %v %v", c.AllowedHosts, c.AllowedOrigins)
	}
}

// Ensure the admin token is generated once, owner-only, in an owner-only folder, and that the env wins.
func TestAdminToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	c, err := load(t, mapEnv(nil), "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	// Before the token exists the error says each way to one: a relay's
	// data folder named (the relay may run on another), or the token.
	if _, err := c.AdminToken(false); !errors.Is(err, config.ErrNoToken) || !strings.Contains(err.Error(), "--data-dir or CROSSCHAT_DATA_DIR") || !strings.Contains(err.Error(), "CROSSCHAT_API_TOKEN") {
		t.Fatalf("before the token exists: %v", err)
	}
	tok, err := c.AdminToken(true)
	if err != nil || len(tok) != 43 {
		t.Fatalf("token %q, %v", tok, err)
	}
	again, _ := c.AdminToken(true)
	if again != tok {
		t.Fatal("token changed on second call")
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, c.TokenPath(): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// Windows has no Unix permission bits (Go reports 0666/0777).
		if runtime.GOOS != "windows" && st.Mode().Perm() != want {
			t.Fatalf("%s mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	c2, _ := load(t, mapEnv(map[string]string{"CROSSCHAT_API_TOKEN": " secret-secret-secret-secret "}), "--data-dir", dir)
	if got, _ := c2.AdminToken(true); got != "secret-secret-secret-secret" {
		t.Fatalf("env token %q", got)
	}
}

// Ensures a child's environment keeps everything but the relay's own
// variables, which would hand it this process's settings.
func TestWithoutRelayEnv(t *testing.T) {
	got := config.WithoutRelayEnv([]string{"PATH=/bin", "CROSSCHAT_PORT=1", "HOME=/h", "CROSSCHAT_API_TOKEN=x", "XCROSSCHAT_A=1"})
	want := []string{"PATH=/bin", "HOME=/h", "XCROSSCHAT_A=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
