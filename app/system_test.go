package app

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

type fakeAutostart struct{ on bool }

func (f *fakeAutostart) Enabled() (bool, error) { return f.on, nil }
func (f *fakeAutostart) Enable() error          { f.on = true; return nil }
func (f *fakeAutostart) Disable() error         { f.on = false; return nil }

func startInternal(t *testing.T) *Relay {
	t.Helper()
	cfg := config.Config{Host: "127.0.0.1", DataDir: filepath.Join(t.TempDir(), "d"), OperatorSlug: "operator", TaskRetentionDays: 30}
	r, err := Start(cfg, StartOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	return r
}

// Ensure the start-at-login toggle reports the state it set.
func TestSystemStartAtLogin(t *testing.T) {
	fake := &fakeAutostart{}
	s := &System{c: &core{}, autostart: func() autostarter { return fake }}
	if on, _ := s.StartsAtLogin(); on {
		t.Fatal("on before enabling")
	}
	if on, err := s.SetStartAtLogin(true); err != nil || !on || !fake.on {
		t.Fatalf("enable: %v %v", on, err)
	}
	if on, err := s.SetStartAtLogin(false); err != nil || on {
		t.Fatalf("disable: %v %v", on, err)
	}
}

// Ensure System.Quit runs for a caller on this computer over the bridge
// (what `crosschat-relay quit` calls), and that System methods are refused to callers that are not on this computer.
func TestSystemQuitAndLocalOnly(t *testing.T) {
	r := startInternal(t)
	quitted := make(chan struct{})
	r.Services.System.setQuit(func() { close(quitted) })
	token, err := r.Config().AdminToken(false)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := r.Services.System.AdminToken(); err != nil || tok != token {
		t.Fatalf("admin token %q %v", tok, err)
	}

	cl := client.New(r.Config().BaseURL(), token)
	proxied := &http.Client{Transport: headerRT{"X-Forwarded-For": "203.0.113.9"}}
	cl.HTTP = proxied
	err = cl.Call(context.Background(), "System", "Quit", nil)
	if relay.ErrorCode(err) == "" || !strings.Contains(err.Error(), "local_only") {
		t.Fatalf("proxied quit: %v", err)
	}
	select {
	case <-quitted:
		t.Fatal("quit ran for a proxied caller")
	default:
	}

	if err := client.New(r.Config().BaseURL(), token).Call(context.Background(), "System", "Quit", nil); err != nil {
		t.Fatalf("quit from this computer: %v", err)
	}
	select {
	case <-quitted:
	case <-time.After(10 * time.Second):
		t.Fatal("quit did not run")
	}
}

type headerRT map[string]string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestBridgeAccessTable: every exported method of every bound service is
// classified in bridgeAccess, and every entry names a real method. The
// test fails when a new method is added without deciding who may call it.
func TestBridgeAccessTable(t *testing.T) {
	bound := NewServices("test").Bound()
	seen := map[string]bool{}
	for name, svc := range bound {
		typ := reflect.TypeOf(svc)
		for i := 0; i < typ.NumMethod(); i++ {
			key := name + "." + typ.Method(i).Name
			seen[key] = true
			if _, ok := bridgeAccess[key]; !ok {
				t.Errorf("%s is not in bridgeAccess: mark it web.Remote or web.LocalOnly", key)
			}
		}
	}
	for key := range bridgeAccess {
		if !seen[key] {
			t.Errorf("bridgeAccess lists %s, which is not a bound method", key)
		}
	}
	for _, key := range []string{"Settings.Update", "Tasks.FilePreview", "Tasks.RevealFile", "System.RevealDataFolder", "System.AdminToken"} {
		if bridgeAccess[key] != web.LocalOnly {
			t.Errorf("%s must be local-only", key)
		}
	}
	for key, a := range bridgeAccess {
		if strings.HasPrefix(key, "Workers.") || strings.HasPrefix(key, "System.") {
			if a != web.LocalOnly {
				t.Errorf("%s must be local-only", key)
			}
		}
	}
}

// TestRemoteCallerCannotChangeLimitsOrWorkers: a caller behind a proxy (or
// on another computer) with the admin token still cannot raise the hand-off
// limit, set up a worker or preview files; it can do the relay's own work.
func TestRemoteCallerCannotChangeLimitsOrWorkers(t *testing.T) {
	r := startInternal(t)
	token, err := r.Config().AdminToken(false)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := r.Services.Settings.Get()
	if err != nil {
		t.Fatal(err)
	}
	for _, hdr := range []string{"X-Forwarded-For", "X-Real-IP", "Via", "X-Forwarded-Host", "Forwarded"} {
		cl := client.New(r.Config().BaseURL(), token)
		cl.HTTP = &http.Client{Transport: headerRT{hdr: "203.0.113.9"}}
		for _, tc := range []struct {
			service, method string
			args            []any
		}{
			{"Settings", "Update", []any{settings}},
			{"Workers", "List", nil},
			{"Workers", "Save", []any{map[string]any{"agentSlug": "operator"}}},
			{"Tasks", "FilePreview", []any{"t", "f"}},
			{"System", "RevealDataFolder", nil},
		} {
			err := cl.Call(context.Background(), tc.service, tc.method, nil, tc.args...)
			if !strings.Contains(fmt.Sprint(err), "local_only") {
				t.Errorf("%s: %s.%s: %v, want local_only", hdr, tc.service, tc.method, err)
			}
		}
		if err := cl.Call(context.Background(), "Tasks", "List", nil, relay.TaskFilter{}); err != nil {
			t.Errorf("%s: Tasks.List: %v", hdr, err)
		}
	}
}

// Ensure start at login repeats the flags the app was started with
// (without --hidden, which the entry adds), the data folder made absolute.
func TestLaunchFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--hidden"}, ""},
		{[]string{"--port", "5000", "--data-dir", "rel/dir", "--hidden"}, "--port 5000 --data-dir=/abs/dir"},
		{[]string{"-hidden=true", "--data-dir=x", "--allowed-hosts=a,b"}, "--data-dir=/abs/dir --allowed-hosts=a,b"},
	}
	for _, tt := range tests {
		if got := strings.Join(launchFlags(tt.args, "/abs/dir"), " "); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.args, got, tt.want)
		}
	}
	s := &System{c: &core{}}
	s.setLaunchArgs([]string{"--port", "5000"}, "/d")
	a, ok := s.entry().(*desktop.Autostart)
	if !ok || strings.Join(a.Exec[1:], " ") != "--hidden --port 5000" {
		t.Fatalf("entry %+v", s.entry())
	}
}
