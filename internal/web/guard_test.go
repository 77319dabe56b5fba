package web_test

import (
	"bufio"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/crosschat/crosschat-relay/internal/loopback"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// TestHostOriginGuards ensures every route but /health and /mcp refuses an
// unexpected Host or Origin with the REST error codes.
func TestHostOriginGuards(t *testing.T) {
	e := newEnv(t, envOptions{assets: testAssets()})
	routes := []request{
		{method: http.MethodPost, path: "/api/enroll", body: `{}`},
		{method: http.MethodPost, path: "/bridge/Tests.Sum", body: `[1,2]`, bearer: adminToken},
		{method: http.MethodGet, path: "/bridge/session"},
		{method: http.MethodGet, path: "/"},
		{method: http.MethodGet, path: "/tasks/123"},
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		code   string
	}{
		{"EvilHost", map[string]string{"Host": "evil.example"}, "host_not_allowed"},
		{"EvilHostPort", map[string]string{"Host": "evil.example:80"}, "host_not_allowed"},
		{"LookalikeHost", map[string]string{"Host": "localhost.evil.example"}, "host_not_allowed"},
		{"EvilOrigin", map[string]string{"Origin": "https://evil.example"}, "origin_not_allowed"},
		{"NullOrigin", map[string]string{"Origin": "null"}, "origin_not_allowed"},
		{"GarbageOrigin", map[string]string{"Origin": "::::"}, "origin_not_allowed"},
	} {
		for _, route := range routes {
			t.Run(tc.name+route.path, func(t *testing.T) {
				req := route
				req.header = tc.header
				resp := e.do(t, req)
				if resp.status != http.StatusForbidden || resp.errorCode(t) != tc.code {
					t.Fatalf("status = %d body = %s, want 403 %s", resp.status, resp.body, tc.code)
				}
			})
		}
	}

	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"Localhost", map[string]string{"Host": "localhost:4318"}},
		{"LocalhostUpper", map[string]string{"Host": "LOCALHOST"}},
		{"IPv6", map[string]string{"Host": "[::1]:4318"}},
		{"OriginWithPort", map[string]string{"Origin": "http://localhost:5173"}},
	} {
		t.Run("Allow"+tc.name, func(t *testing.T) {
			resp := e.do(t, request{path: "/bridge/session", header: tc.header})
			if resp.status != http.StatusOK {
				t.Fatalf("status = %d: %s", resp.status, resp.body)
			}
		})
	}
}

// unhealthy reports the store as unhealthy.
type unhealthy struct{ relay.Service }

func (unhealthy) Healthy() bool { return false }

// TestHealth ensures /health skips the Host check and reports degraded
// health with 503.
func TestHealth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wrap   func(relay.Service) relay.Service
		method string
		host   string
		status int
		want   string
	}{
		{"OK", nil, http.MethodGet, "", http.StatusOK, `{"status":"ok"}`},
		{"EvilHostIsExempt", nil, http.MethodGet, "evil.example", http.StatusOK, `{"status":"ok"}`},
		{"Head", nil, http.MethodHead, "", http.StatusOK, ""},
		{"Degraded", func(s relay.Service) relay.Service { return unhealthy{s} }, http.MethodGet, "", http.StatusServiceUnavailable, `{"status":"degraded"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{wrap: tc.wrap})
			req := request{method: tc.method, path: "/health"}
			if tc.host != "" {
				req.header = map[string]string{"Host": tc.host, "Origin": "https://evil.example"}
			}
			resp := e.do(t, req)
			if resp.status != tc.status || strings.TrimSpace(string(resp.body)) != tc.want {
				t.Fatalf("got %d %q, want %d %q", resp.status, resp.body, tc.status, tc.want)
			}
			if ct := resp.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("content-type = %q", ct)
			}
		})
	}
}

// TestMalformedHost ensures a Host header that is not a host name neither
// crashes the handler nor the server: net/http refuses it, and the next
// request is served.
func TestMalformedHost(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, host := range []string{"a b", "[::1", "[zz]:1", "localhost:99999999", "\x7f"} {
		for _, path := range []string{"/health", "/mcp", "/api/enroll", "/"} {
			t.Run(path+host, func(t *testing.T) {
				status := rawGet(t, e.host, path, host)
				if status != http.StatusOK && status != http.StatusBadRequest && status != http.StatusForbidden {
					t.Fatalf("status = %d", status)
				}
				if resp := e.do(t, request{path: "/health"}); resp.status != http.StatusOK {
					t.Fatalf("server unhealthy after malformed host: %d", resp.status)
				}
			})
		}
	}
	// The handler itself (not only net/http) copes with broken Host values.
	h := newHandler(t, e.svc, envOptions{})
	for _, host := range []string{"a b", "", "[::1", "[::1]x", "x:y:z", "[]", ":80"} {
		for _, path := range []string{"/health", "/mcp", "/api/enroll", "/", "/bridge/session"} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Host = host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code >= 500 {
				t.Errorf("Host %q %s: status %d", host, path, w.Code)
			}
		}
	}
}

// rawGet sends a hand-written GET over TCP and returns the status.
func rawGet(t *testing.T, addr, path, host string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestLoopbackHelpers ensures the default hosts are loopback (the check
// itself: loopback.TestHost).
func TestLoopbackHelpers(t *testing.T) {
	for _, h := range web.DefaultAllowedHosts() {
		if !loopback.Host(h) {
			t.Errorf("default host %q is not loopback", h)
		}
	}
}

// TestNewHandlerConfig ensures NewHandler refuses incomplete configurations.
func TestNewHandlerConfig(t *testing.T) {
	db := openStore(t, nil)
	ok := web.Config{Service: db, AdminToken: adminToken, MCP: echoPrincipal()}
	if _, err := web.NewHandler(ok); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	var nilSvc *testService
	for _, tc := range []struct {
		name string
		edit func(*web.Config)
	}{
		{"NoService", func(c *web.Config) { c.Service = nil }},
		{"NoToken", func(c *web.Config) { c.AdminToken = "" }},
		{"BlankToken", func(c *web.Config) { c.AdminToken = "   " }},
		{"PaddedToken", func(c *web.Config) { c.AdminToken = " x " }},
		{"NoMCP", func(c *web.Config) { c.MCP = nil }},
		{"NegativeBody", func(c *web.Config) { c.MaxBodyBytes = -1 }},
		{"BadHost", func(c *web.Config) { c.AllowedHosts = []string{"a b"} }},
		{"BadOrigin", func(c *web.Config) { c.AllowedOrigins = []string{"https://x/"} }},
		{"BadServiceName", func(c *web.Config) { c.Services = map[string]any{"a.b": &testService{}} }},
		{"NilService", func(c *web.Config) { c.Services = map[string]any{"Tests": nilSvc} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if _, err := web.NewHandler(c); err == nil {
				t.Fatal("NewHandler accepted a bad config")
			}
		})
	}
}

// testAssets is a small built dashboard.
func testAssets() fstest.MapFS {
	return fstest.MapFS{
		"index.html":     {Data: []byte("<!doctype html><title>Crosschat</title>")},
		"assets/app.js":  {Data: []byte("console.log('app')")},
		"assets/app.css": {Data: []byte("body{}")},
		"favicon.svg":    {Data: []byte("<svg/>")},
		"nested":         {Mode: fs.ModeDir | 0o755},
	}
}
