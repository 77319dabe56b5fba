package web_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
)

// TestDashboard ensures files are served, client routes fall back to
// index.html, nothing escapes the file system, and the security headers
// are set.
func TestDashboard(t *testing.T) {
	e := newEnv(t, envOptions{assets: testAssets()})
	const index = "<!doctype html><title>Crosschat</title>"
	for _, tc := range []struct {
		name   string
		method string
		path   string
		status int
		body   string
		cache  string
		ctype  string
	}{
		{"Root", "GET", "/", 200, index, "no-cache", "text/html"},
		{"IndexByName", "GET", "/index.html", 200, index, "no-cache", "text/html"},
		{"ClientRoute", "GET", "/tasks/0b6c1c1e-1111-4111-8111-111111111111", 200, index, "no-cache", "text/html"},
		{"Asset", "GET", "/assets/app.js", 200, "console.log('app')", "public, max-age=31536000, immutable", "javascript"},
		{"Stylesheet", "GET", "/assets/app.css", 200, "body{}", "public, max-age=31536000, immutable", "text/css"},
		{"TopLevelFile", "GET", "/favicon.svg", 200, "<svg/>", "no-cache", "image/svg+xml"},
		{"MissingAsset", "GET", "/assets/gone.js", 404, "", "no-cache", "text/plain"},
		{"Directory", "GET", "/nested", 200, index, "no-cache", "text/html"},
		{"Traversal", "GET", "/..%2f..%2fdata%2frelay.db", 200, index, "no-cache", "text/html"},
		{"DotDot", "GET", "/assets/../index.html", 200, index, "no-cache", "text/html"},
		{"Head", "HEAD", "/", 200, "", "no-cache", "text/html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: tc.method, path: tc.path})
			if resp.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", resp.status, tc.status, resp.body)
			}
			if tc.body != "" && string(resp.body) != tc.body {
				t.Errorf("body = %q, want %q", resp.body, tc.body)
			}
			if got := resp.header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("cache-control = %q, want %q", got, tc.cache)
			}
			if got := resp.header.Get("Content-Type"); !strings.Contains(got, tc.ctype) {
				t.Errorf("content-type = %q, want %q", got, tc.ctype)
			}
			checkSecurityHeaders(t, resp)
		})
	}

	t.Run("OtherMethods", func(t *testing.T) {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			resp := e.do(t, request{method: m, path: "/", body: "{}"})
			if resp.status != http.StatusNotFound || resp.errorCode(t) != "not_found" {
				t.Errorf("%s /: %d %s", m, resp.status, resp.body)
			}
		}
	})
}

// TestDashboardNotBuilt ensures a missing dashboard is a 404 saying so.
func TestDashboardNotBuilt(t *testing.T) {
	for name, assets := range map[string]fstest.MapFS{
		"Nil":     nil,
		"NoIndex": {"assets/app.js": {Data: []byte("x")}},
	} {
		t.Run(name, func(t *testing.T) {
			o := envOptions{}
			if assets != nil {
				o.assets = assets
			}
			e := newEnv(t, o)
			resp := e.do(t, request{path: "/tasks"})
			if resp.status != http.StatusNotFound || !strings.Contains(string(resp.body), "not built") {
				t.Fatalf("got %d %q", resp.status, resp.body)
			}
			checkSecurityHeaders(t, resp)
		})
	}
}

// checkSecurityHeaders checks the dashboard's security headers.
func checkSecurityHeaders(t *testing.T, resp response) {
	t.Helper()
	resp.wantHeaders(t, map[string]string{
		"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
	})
}
