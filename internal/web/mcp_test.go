package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestMCPAuth ensures /mcp resolves the admin, agent and run tokens to their
// principals and answers 401 with WWW-Authenticate for anything else.
func TestMCPAuth(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	agentTok := createAgent(t, e.svc, "builder")
	revokedTok := createAgent(t, e.svc, "revoked")
	if err := e.svc.RevokeToken(ctx, "revoked"); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	taskID, runTok := issueRunToken(t, e.svc, "builder")

	for _, tc := range []struct {
		name   string
		header string // the Authorization header, verbatim
		want   relay.Principal
	}{
		{"Admin", "Bearer " + adminToken, relay.Admin},
		{"AdminLowercaseScheme", "bearer   " + adminToken + "  ", relay.Admin},
		{"Agent", "Bearer " + agentTok, relay.Principal{Kind: relay.PrincipalAgent, Slug: "builder"}},
		{"Run", "Bearer " + runTok, relay.Principal{Kind: relay.PrincipalAgent, Slug: "builder", RunTaskID: taskID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: http.MethodPost, path: "/mcp", body: `{}`, header: map[string]string{"Authorization": tc.header}})
			if resp.status != http.StatusOK {
				t.Fatalf("status = %d, want 200: %s", resp.status, resp.body)
			}
			m := resp.json(t)
			p, _ := m["principal"].(map[string]any)
			if m["ok"] != true || p["kind"] != string(tc.want.Kind) || str(p["slug"]) != tc.want.Slug || str(p["runTaskId"]) != tc.want.RunTaskID {
				t.Fatalf("principal = %s, want %+v", resp.body, tc.want)
			}
			resp.wantHeaders(t, map[string]string{"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})
		})
	}

	for _, tc := range []struct {
		name   string
		header string
	}{
		{"NoHeader", ""},
		{"WrongToken", "Bearer nope"},
		{"NotBearer", "Basic " + adminToken},
		{"EmptyBearer", "Bearer "},
		{"AdminPrefix", "Bearer " + adminToken[:10]},
		{"RevokedAgent", "Bearer " + revokedTok},
		{"Oversized", "Bearer cca_" + strings.Repeat("x", 5000)},
	} {
		t.Run("Refuse"+tc.name, func(t *testing.T) {
			req := request{method: http.MethodPost, path: "/mcp", body: `{}`}
			if tc.header != "" {
				req.header = map[string]string{"Authorization": tc.header}
			}
			resp := e.do(t, req)
			if resp.status != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401: %s", resp.status, resp.body)
			}
			resp.wantHeaders(t, map[string]string{"WWW-Authenticate": `Bearer realm="crosschat-relay"`, "Content-Type": "application/json; charset=utf-8"})
			m := resp.json(t)
			if m["error"] != "unauthorized" || m["message"] != "Send Authorization: Bearer <admin token or per-agent token>." {
				t.Errorf("body = %s", resp.body)
			}
		})
	}
}

// TestMCPGuards ensures the Host and Origin checks of /mcp answer with the
// MCP SDK's JSON-RPC error and that allowed origins get CORS headers.
func TestMCPGuards(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		name    string
		header  map[string]string
		message string
	}{
		{"EvilHost", map[string]string{"Host": "evil.example"}, "Invalid Host: evil.example"},
		{"EvilHostWithPort", map[string]string{"Host": "evil.example:4318"}, "Invalid Host: evil.example"},
		{"BadPort", map[string]string{"Host": "localhost:43x"}, "Invalid Host header: localhost:43x"},
		{"EvilOrigin", map[string]string{"Origin": "https://evil.example"}, "Invalid Origin: evil.example"},
		{"NullOrigin", map[string]string{"Origin": "null"}, "Invalid Origin header: null"},
		{"FileOrigin", map[string]string{"Origin": "file://localhost"}, "Invalid Origin header: file://localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: http.MethodPost, path: "/mcp", body: `{}`, header: tc.header, bearer: adminToken})
			if resp.status != http.StatusForbidden {
				t.Fatalf("status = %d, want 403: %s", resp.status, resp.body)
			}
			m := resp.json(t)
			rpcErr, _ := m["error"].(map[string]any)
			if m["jsonrpc"] != "2.0" || rpcErr["code"] != float64(-32000) || rpcErr["message"] != tc.message || m["id"] != nil {
				t.Fatalf("body = %s, want message %q", resp.body, tc.message)
			}
			if resp.header.Get("Cache-Control") != "no-store" {
				t.Errorf("cache-control missing on a guard answer")
			}
		})
	}

	t.Run("AllowedOriginGetsCORS", func(t *testing.T) {
		resp := e.do(t, request{method: http.MethodPost, path: "/mcp", body: `{}`, bearer: adminToken,
			header: map[string]string{"Origin": "http://localhost:5173", "Host": "localhost:4318"}})
		if resp.status != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.status, resp.body)
		}
		resp.wantHeaders(t, map[string]string{"Access-Control-Allow-Origin": "http://localhost:5173", "Vary": "Origin"})
	})

	for _, tc := range []struct {
		name     string
		header   map[string]string
		status   int
		wantCORS bool
	}{
		{"PreflightAllowed", map[string]string{"Origin": "http://127.0.0.1:9999"}, http.StatusNoContent, true},
		{"PreflightNoOrigin", nil, http.StatusNoContent, false},
		{"PreflightEvilOrigin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, false},
		// Host is not checked on a preflight.
		{"PreflightEvilHost", map[string]string{"Host": "evil.example", "Origin": "http://localhost"}, http.StatusNoContent, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: http.MethodOptions, path: "/mcp", header: tc.header})
			if resp.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", resp.status, tc.status, resp.body)
			}
			if got := resp.header.Get("Access-Control-Allow-Methods") != ""; got != tc.wantCORS {
				t.Errorf("CORS headers present = %v, want %v (%v)", got, tc.wantCORS, resp.header)
			}
			if tc.wantCORS && resp.header.Get("Access-Control-Allow-Headers") != "authorization, content-type, mcp-protocol-version, mcp-session-id" {
				t.Errorf("allow-headers = %q", resp.header.Get("Access-Control-Allow-Headers"))
			}
			if tc.status == http.StatusForbidden && resp.errorCode(t) != "origin_not_allowed" {
				t.Errorf("body = %s", resp.body)
			}
		})
	}

	t.Run("TrailingSlashIsNotMCP", func(t *testing.T) {
		resp := e.do(t, request{method: http.MethodPost, path: "/mcp/", body: `{}`, bearer: adminToken})
		if resp.status != http.StatusNotFound {
			t.Fatalf("status = %d, want 404: %s", resp.status, resp.body)
		}
	})
}

// str returns v as a string, or "" when it is not one.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// TestMCPBodyHandedOverWhole: the MCP handler gets the body the guard read
// and bounded, whole (Bytes, so that internal/mcp uses it without reading a
// copy) and as a reader of the same bytes (for mcp-go), with its length.
func TestMCPBodyHandedOverWhole(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`
	got := make(chan string, 2)
	e := newEnv(t, envOptions{mcp: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		whole, ok := r.Body.(interface{ Bytes() []byte })
		if !ok {
			got <- "no Bytes"
			return
		}
		read, err := io.ReadAll(r.Body)
		if err != nil || r.ContentLength != int64(len(body)) {
			got <- fmt.Sprintf("read %v, length %d", err, r.ContentLength)
			return
		}
		got <- string(whole.Bytes())
		got <- string(read)
	})})
	if resp := e.do(t, request{method: http.MethodPost, path: "/mcp", body: body, header: map[string]string{"Authorization": "Bearer " + adminToken}}); resp.status != http.StatusOK {
		t.Fatalf("status = %d: %s", resp.status, resp.body)
	}
	for _, what := range []string{"Bytes", "the reader"} {
		if s := <-got; s != body {
			t.Fatalf("%s gave %q, want the body", what, s)
		}
	}
}
