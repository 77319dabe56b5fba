package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// adminToken is the admin token the test auth middleware accepts.
const adminToken = "test-admin-token"

// countingService counts the claim_next_task calls in flight, so tests can
// tell when a long-poll is waiting and when it has returned.
type countingService struct {
	relay.Service
	claims atomic.Int64
}

func (c *countingService) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	c.claims.Add(1)
	defer c.claims.Add(-1)
	return c.Service.ClaimNext(ctx, in)
}

// withAuth is a small stand-in for the web layer's auth: it resolves the
// bearer token into a principal. Without a valid token the request goes on
// without one, so the tools' own unauthorized answer can be tested.
func withAuth(svc relay.Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Guard", "seen") // as the web layer's guard sets headers before the MCP handler
		ctx := r.Context()
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if tok == adminToken {
				ctx = relay.WithPrincipal(ctx, relay.Admin)
			} else if p, err := svc.Authenticate(ctx, tok); err == nil {
				ctx = relay.WithPrincipal(ctx, p)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// env is a relay behind the MCP handler on a loopback HTTP server.
type env struct {
	t   *testing.T
	svc *countingService
	db  interface{ Close() error }
	srv *httptest.Server
	// stopRequests cancels every request's context, as the relay does to
	// shut down (http.Server.BaseContext).
	stopRequests context.CancelFunc
	handler      *relaymcp.Handler
}

// testLogger sends slog output to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newEnv(t *testing.T) *env {
	t.Helper()
	svc, closer := openService(t)
	e := &env{t: t, svc: &countingService{Service: svc}, db: closer}
	base, stop := context.WithCancel(context.Background())
	e.stopRequests = stop
	e.handler = relaymcp.NewHandler(e.svc, relaymcp.Options{Version: "test", Logger: testLogger(t)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", withAuth(e.svc, e.handler))
	e.srv = httptest.NewUnstartedServer(mux)
	e.srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	e.srv.Start()
	t.Cleanup(func() {
		stop()
		e.srv.CloseClientConnections()
		e.srv.Close()
		_ = closer.Close()
	})
	return e
}

func (e *env) url() string { return e.srv.URL + "/mcp" }

// agent creates an agent and returns its token.
func (e *env) agent(slug string, caps ...string) string {
	e.t.Helper()
	if len(caps) == 0 {
		caps = []string{"text-input", "text-output"}
	}
	_, tok, err := e.svc.CreateAgent(context.Background(), relay.CreateAgentInput{
		Slug: slug, DisplayName: strings.ToUpper(slug[:1]) + slug[1:], ModelSlug: "test-model", Capabilities: caps,
	})
	if err != nil {
		e.t.Fatalf("create agent %s: %v", slug, err)
	}
	return tok
}

// client connects a real streamable-HTTP MCP client with token, on the
// newest protocol (server/discover, no handshake).
func (e *env) client(token string) *client.Client { return e.clientAt(token, "") }

// chainLimit sets the relay's hand-off limit.
func (e *env) chainLimit(n int) {
	e.t.Helper()
	s, err := e.svc.Settings(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	s.MaxChainDepth = n
	if _, err := e.svc.UpdateSettings(context.Background(), s); err != nil {
		e.t.Fatal(err)
	}
}

// callers connects one client per name for a tool table: "admin" holds the
// admin token, "none" no token, and any other name is a new agent of that
// slug, with the capabilities after a colon ("bob:text-input") or the
// default ones.
func (e *env) callers(names ...string) map[string]*client.Client {
	out := make(map[string]*client.Client, len(names))
	for _, n := range names {
		switch slug, caps, _ := strings.Cut(n, ":"); {
		case n == "admin":
			out[n] = e.client(adminToken)
		case n == "none":
			out[n] = e.client("")
		case caps == "":
			out[slug] = e.client(e.agent(slug))
		default:
			out[slug] = e.client(e.agent(slug, strings.Split(caps, ",")...))
		}
	}
	return out
}

// clientAt connects a client pinned to protocol version (empty: newest).
// A version before 2026-07-28 makes it use the initialize handshake, as the
// agent CLIs do today.
func (e *env) clientAt(token, version string) *client.Client {
	e.t.Helper()
	return e.clientWith(token, version, nil)
}

// clientWith is clientAt with more request headers.
func (e *env) clientWith(token, version string, more map[string]string) *client.Client {
	e.t.Helper()
	headers := map[string]string{}
	for k, v := range more {
		headers[k] = v
	}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	trans, err := transport.NewStreamableHTTP(e.url(), transport.WithHTTPHeaders(headers))
	if err != nil {
		e.t.Fatalf("new transport: %v", err)
	}
	var opts []client.ClientOption
	if version != "" {
		opts = append(opts, client.WithProtocolVersion(version))
	}
	c := client.NewClient(trans, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		e.t.Fatalf("start client: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "mcp-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// eras are the protocol versions the relay is exercised with: the newest
// (stateless core) and the handshake versions the agent CLIs send.
var eras = []string{"", "2025-11-25", "2025-06-18"}

func eraName(version string) string {
	if version == "" {
		return "latest"
	}
	return version
}

// call calls a tool and fails the test on a transport or protocol error.
func call(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, toolRequest(name, args))
	if err != nil {
		t.Fatalf("%s: call failed: %v", name, err)
	}
	return res
}

// toolRequest is a tools/call request for name with args.
func toolRequest(name string, args any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// resultText returns the single text content of res.
func resultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want 1 content, got %d", len(res.Content))
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("content is %T, not text", res.Content[0])
	}
	return tc.Text
}

// structured returns the structuredContent of res as raw JSON.
func structured(t testing.TB, res *mcp.CallToolResult) json.RawMessage {
	t.Helper()
	if len(res.RawStructuredContent) > 0 {
		return res.RawStructuredContent
	}
	if res.StructuredContent == nil {
		t.Fatalf("result has no structuredContent")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("marshal structuredContent: %v", err)
	}
	return b
}

func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("bad JSON %q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// isCompact reports whether s is JSON without insignificant whitespace.
func isCompact(s string) bool {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return false
	}
	return b.String() == s
}

// ok asserts a successful result with compact JSON text and the same value
// as structuredContent (wrapped under wrapKey when the text is an array),
// decodes it into out and returns the text.
func ok(t testing.TB, res *mcp.CallToolResult, out any, wrapKey ...string) string {
	t.Helper()
	text := resultText(t, res)
	if res.IsError {
		t.Fatalf("want success, got error %s", text)
	}
	if !isCompact(text) {
		t.Errorf("text is not compact JSON: %s", text)
	}
	sc := structured(t, res)
	want := []byte(text)
	if len(wrapKey) > 0 {
		want = []byte(`{"` + wrapKey[0] + `":` + text + `}`)
	}
	if !jsonEqual(t, sc, want) {
		t.Errorf("structuredContent %s differs from text %s", sc, text)
	}
	if out != nil {
		// Start from zero, so keys omitted now don't keep earlier values.
		v := reflect.ValueOf(out).Elem()
		v.Set(reflect.Zero(v.Type()))
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("decode %s: %v", text, err)
		}
	}
	return text
}

// toolError is the error envelope of a failed tool call.
type toolError struct {
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// fails asserts an error result with code and returns its envelope.
func fails(t testing.TB, res *mcp.CallToolResult, code string) toolError {
	t.Helper()
	text := resultText(t, res)
	if !res.IsError {
		t.Fatalf("want error %s, got success %s", code, text)
	}
	var e toolError
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		t.Fatalf("error text is not JSON: %s", text)
	}
	if e.Error != code {
		t.Fatalf("want error %s, got %s (%s)", code, e.Error, e.Message)
	}
	if e.Message == "" {
		t.Errorf("error %s has no message", code)
	}
	if !isCompact(text) {
		t.Errorf("error text is not compact JSON: %s", text)
	}
	if sc := structured(t, res); !jsonEqual(t, sc, []byte(text)) {
		t.Errorf("structuredContent %s differs from text %s", sc, text)
	}
	return e
}

// rpc posts one raw JSON-RPC message, as a client without the SDK would,
// and returns the HTTP status and the JSON-RPC response (from a JSON body or
// the first SSE data line).
func rpc(t testing.TB, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, decodeRPC(t, resp.Body)
}

// decodeRPC reads a JSON-RPC response from a JSON or SSE body; nil if empty.
func decodeRPC(t testing.TB, r io.Reader) map[string]any {
	t.Helper()
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] != '{' {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, found := strings.CutPrefix(sc.Text(), "data: "); found {
				raw = []byte(d)
				break
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("response is not JSON-RPC: %s", raw)
	}
	return m
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
