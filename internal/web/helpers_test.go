package web_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/testkit"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// adminToken is the admin token of every test relay.
const adminToken = "test-admin-token-0123456789"

// env is a real relay handler on a random loopback port, backed by a real
// SQLite store in a temporary directory.
type env struct {
	srv *httptest.Server
	db  *store.DB
	// svc is what the handler was given (the store, or a wrapper of it).
	svc relay.Service
	// host is the Host header of srv ("127.0.0.1:port").
	host string
}

// envOptions tweak newEnv.
type envOptions struct {
	// wrap replaces the service handed to the handler (the store stays the
	// same underneath).
	wrap func(relay.Service) relay.Service
	// assets is the dashboard file system.
	assets fs.FS
	// localOnly marks bridge methods as local-only.
	localOnly func(service, method string) bool
	// maxBody overrides Config.MaxBodyBytes.
	maxBody int64
	// logs, when set, receives the handler's log lines.
	logs *testkit.Buffer
	// clock, when set, is the store's and the handler's clock.
	clock *testClock
	// rateLimit overrides Config.RateLimit.
	rateLimit *web.RateLimit
	// mcp replaces the stand-in MCP handler.
	mcp http.Handler
	// metrics serves /metrics (nil: 404).
	metrics http.Handler
	// bodyTimeout overrides Config.BodyReadTimeout.
	bodyTimeout time.Duration
	// adminToken overrides the admin token (adminToken).
	adminToken string
}

// testClock is a clock the test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock returns a clock standing at the current time.
func newClock() *testClock { return &testClock{t: time.Now()} }

// Now returns the clock's time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStore opens a real store in t.TempDir and closes it at the end. A
// nil clock means the wall clock.
func openStore(tb testing.TB, clock *testClock) *store.DB {
	tb.Helper()
	var opts store.Options
	if clock != nil {
		opts.Now = clock.Now
	}
	db, err := store.Open(filepath.Join(tb.TempDir(), "relay.db"), opts)
	if err != nil {
		tb.Fatalf("store.Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("store.Close: %v", err)
		}
	})
	return db
}

// newHandler builds the handler under test with a test MCP handler and the
// test bridge service.
func newHandler(tb testing.TB, svc relay.Service, o envOptions) http.Handler {
	tb.Helper()
	var logger *slog.Logger
	if o.logs != nil {
		logger = slog.New(slog.NewTextHandler(o.logs, nil))
	}
	var now func() time.Time
	if o.clock != nil {
		now = o.clock.Now
	}
	mcpHandler := o.mcp
	if mcpHandler == nil {
		mcpHandler = echoPrincipal()
	}
	h, err := web.NewHandler(web.Config{
		Logger:          logger,
		Now:             now,
		Service:         svc,
		AdminToken:      cmp.Or(o.adminToken, adminToken),
		MCP:             mcpHandler,
		Services:        map[string]any{"Tests": &testService{svc: svc}},
		Access:          accessFrom(o.localOnly),
		Assets:          o.assets,
		Version:         "1.2.3-test",
		MaxBodyBytes:    o.maxBody,
		RateLimit:       o.rateLimit,
		Metrics:         o.metrics,
		BodyReadTimeout: o.bodyTimeout,
	})
	if err != nil {
		tb.Fatalf("NewHandler: %v", err)
	}
	return h
}

// newEnv starts the handler on httptest.NewServer.
func newEnv(tb testing.TB, o envOptions) *env {
	tb.Helper()
	db := openStore(tb, o.clock)
	var svc relay.Service = db
	if o.wrap != nil {
		svc = o.wrap(db)
	}
	srv := httptest.NewServer(newHandler(tb, svc, o))
	tb.Cleanup(srv.Close)
	return &env{srv: srv, db: db, svc: svc, host: strings.TrimPrefix(srv.URL, "http://")}
}

// echoPrincipal is the stand-in for the MCP handler: it answers 200 with
// the principal the guards put in the context.
func echoPrincipal() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := relay.PrincipalFrom(r.Context())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": ok, "principal": p})
	})
}

// testService is the bound service of the bridge tests.
type testService struct{ svc relay.Service }

// Echo returns text repeated n times (n modulo 5: a negative n panicked
// here, a fault of this helper, which FuzzBridgeArgs found).
func (s *testService) Echo(n int, text string) (string, error) {
	return strings.Repeat(text, (n%5+5)%5), nil
}

// Sum adds two numbers and has no error result.
func (s *testService) Sum(a, b int) int { return a + b }

// Nothing has no results.
func (s *testService) Nothing() {}

// Check returns only an error: a domain error when fail is set.
func (s *testService) Check(fail bool) error {
	if fail {
		return relay.Errorf(relay.EInvalidTaskState, "Not now.")
	}
	return nil
}

// Broken fails with an internal error whose text must not leak.
func (s *testService) Broken() (string, error) {
	return "", errors.New("disk on fire at /secret/path")
}

// Agent returns an agent through the store (unknown_agent → 404).
func (s *testService) Agent(slug string) (relay.Agent, error) {
	return s.svc.GetAgent(context.Background(), slug)
}

// Validate checks a struct argument without storing it.
func (s *testService) Validate(in relay.CreateAgentInput) (relay.CreateAgentInput, error) {
	return in.Validate()
}

// CreateAgent creates an agent through the store.
func (s *testService) CreateAgent(in relay.CreateAgentInput) (relay.Agent, error) {
	a, _, err := s.svc.CreateAgent(context.Background(), in)
	return a, err
}

// Who takes a context, which the bridge does not fill: it is refused.
func (s *testService) Who(ctx context.Context, label string) (string, error) {
	return label, nil
}

// Three has a result shape the bridge does not support.
func (s *testService) Three() (int, int, error) { return 1, 2, nil }

// Explode panics; the handler recovers.
func (s *testService) Explode() string {
	panic("boom")
}

// Local is marked local-only in the tests.
func (s *testService) Local() string { return "here" }

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// wantHeaders reports each header of want that r lacks or holds another
// value of.
func (r response) wantHeaders(tb testing.TB, want map[string]string) {
	tb.Helper()
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			tb.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// json decodes the body into a generic map.
func (r response) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// errorCode returns the "error" field of a JSON error body.
func (r response) errorCode(tb testing.TB) string {
	tb.Helper()
	code, _ := r.json(tb)["error"].(string)
	return code
}

// request describes one test request.
type request struct {
	method string
	path   string
	body   string
	header map[string]string
	// bearer sets Authorization: Bearer <bearer>.
	bearer string
	// cookies are added as they are.
	cookies []*http.Cookie
	// session sets the X-Crosschat-Session header.
	session string
	// from is the loopback address the request is sent from ("" for the
	// system's choice, 127.0.0.1).
	from string
}

// newRequest builds req for the env's server: GET unless req.method says
// otherwise, a JSON body, then the headers and credentials req names.
func (e *env) newRequest(tb testing.TB, ctx context.Context, req request) *http.Request {
	tb.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	method := req.method
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequestWithContext(ctx, method, e.srv.URL+req.path, body)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	if req.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		if strings.EqualFold(k, "Host") {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	if req.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+req.bearer)
	}
	for _, c := range req.cookies {
		r.AddCookie(c)
	}
	if req.session != "" {
		r.Header.Set(web.SessionHeader, req.session)
	}
	return r
}

// do sends req to the env's server and reads the whole answer.
func (e *env) do(tb testing.TB, req request) response {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := e.newRequest(tb, ctx, req)
	c := e.srv.Client()
	if req.from != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(req.from)}}
		c = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	resp, err := c.Do(r)
	if err != nil {
		tb.Fatalf("%s %s: %v", r.Method, req.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// signIn signs in with the admin token and returns the session value.
func (e *env) signIn(tb testing.TB) string {
	tb.Helper()
	resp := e.do(tb, request{method: http.MethodPost, path: "/bridge/session", body: `{"token":"` + adminToken + `"}`})
	if resp.status != http.StatusOK {
		tb.Fatalf("sign in: status %d: %s", resp.status, resp.body)
	}
	v, _ := resp.json(tb)["session"].(string)
	if v == "" {
		tb.Fatalf("sign in: no session value in %s", resp.body)
	}
	return v
}

// createAgent creates an agent through the store and returns its token.
func createAgent(tb testing.TB, svc relay.Service, slug string) string {
	tb.Helper()
	_, tok, err := svc.CreateAgent(context.Background(), relay.CreateAgentInput{
		Slug: slug, DisplayName: "Agent " + slug, ModelSlug: "test-model", Capabilities: []string{"text-input"},
	})
	if err != nil {
		tb.Fatalf("CreateAgent %s: %v", slug, err)
	}
	return tok
}

// issueRunToken posts a task to slug from the operator and issues a run
// token for it, valid for an hour; it returns the task's id and the token.
func issueRunToken(tb testing.TB, svc relay.Service, slug string) (taskID, token string) {
	tb.Helper()
	ctx := context.Background()
	task, err := svc.PostTask(ctx, relay.PostTaskInput{
		SenderSlug: svc.OperatorSlug(), RecipientSlug: slug, Title: "Build", Instructions: "Build it.",
	})
	if err != nil {
		tb.Fatalf("PostTask: %v", err)
	}
	token, err = svc.IssueRunToken(ctx, slug, task.ID, 3600)
	if err != nil {
		tb.Fatalf("IssueRunToken: %v", err)
	}
	return task.ID, token
}

// createInvite creates an invite through the store and returns it with its code.
func createInvite(tb testing.TB, svc relay.Service, in relay.InviteInput) (relay.Invite, string) {
	tb.Helper()
	inv, code, err := svc.CreateInvite(context.Background(), in)
	if err != nil {
		tb.Fatalf("CreateInvite: %v", err)
	}
	return inv, code
}

// enrollBody is a valid enrollment body for code and slug.
func enrollBody(code, slug string) string {
	b, _ := json.Marshal(map[string]any{
		"invite": code, "slug": slug, "displayName": "Enrolled " + slug,
		"modelSlug": "test-model", "capabilities": []string{"text-input", "code-execution"},
	})
	return string(b)
}

// noRateLimit turns the sign-in and enroll rate limit off, for tests that
// make many refused attempts on purpose.
var noRateLimit = &web.RateLimit{Burst: -1}

// accessFrom makes every test method callable, local-only where localOnly says so.
func accessFrom(localOnly func(service, method string) bool) func(service, method string) web.Access {
	return func(service, method string) web.Access {
		if localOnly != nil && localOnly(service, method) {
			return web.LocalOnly
		}
		return web.Remote
	}
}
