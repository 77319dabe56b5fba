// Package web is the relay's HTTP surface: the MCP endpoint with its guards,
// the public enrollment and health routes, the generic bridge that exposes
// the bound dashboard services over HTTP, the change stream, and the static
// dashboard.
//
// It imports internal/relay and the standard library only. The MCP handler,
// the service implementation and the bound services are handed to it as
// values in Config.
package web

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// DefaultMaxBodyBytes caps request bodies on enroll, session and bridge routes.
const DefaultMaxBodyBytes int64 = 1 << 20

// Config is what NewHandler needs. Service, AdminToken and MCP are required;
// everything else has a default.
type Config struct {
	// Service is the relay (internal/store in production).
	Service relay.Service
	// AdminToken is the admin bearer token. Dashboard sessions live in this
	// handler's memory, so a relay restarted with a new token has none.
	AdminToken string
	// MCP serves /mcp once the request passed the guards; the principal is in
	// the request context (relay.PrincipalFrom).
	MCP http.Handler
	// Services maps a bridge name (e.g. "Tasks") to a bound service value,
	// usually a struct pointer. Its exported methods are callable as
	// POST /bridge/<name>.<Method>.
	Services map[string]any
	// Access classifies each bridge method: Remote, LocalOnly (callable only
	// from this computer: loopback, not proxied) or NotCallable (the zero
	// value: answered like a method that does not exist). Nil makes every
	// method Remote.
	Access func(service, method string) Access
	// AllowedHosts are the hostnames (no port; IPv6 with or without
	// brackets) accepted in the Host header. Empty means DefaultAllowedHosts.
	AllowedHosts []string
	// AllowedOrigins are the hostnames accepted in an Origin header (http or
	// https; the port is not compared). Empty means AllowedHosts.
	AllowedOrigins []string
	// Assets is the built dashboard (index.html, assets/…); nil serves a
	// "not built" page.
	Assets fs.FS
	// Version is reported by GET /bridge/session.
	Version string
	// Logger receives request-level failures; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Now is the clock for session cookies; nil means time.Now.
	Now func() time.Time
	// Push serves GET /api/push, the agents' push streams; nil answers 404.
	Push relay.PushSource
	// PushHeartbeat spaces the push stream's heartbeats; 0 means DefaultPushHeartbeat.
	PushHeartbeat time.Duration
	// RateLimit bounds sign-in and enroll attempts per client address; nil
	// means DefaultRateLimit.
	RateLimit *RateLimit
	// PublicURL (--public-url, no trailing slash) is the base of the mcpUrl
	// an enrollment answers with; empty means the address the agent reached.
	PublicURL string
	// Metrics serves GET /metrics (the Prometheus text format) to the admin
	// token or to loopback; nil answers 404.
	Metrics http.Handler
	// BodyReadTimeout bounds the time a request's body may take to arrive
	// (408 after it); 0 scales it to the body's size: 10 s plus the size at
	// 8 KiB/s, about two minutes for the largest allowed body. The header
	// timeout is the http.Server's (ReadHeaderTimeout).
	BodyReadTimeout time.Duration
}

// Access says who may call a bridge method.
type Access int

// Bridge method access levels; the zero value is NotCallable, so a method
// nobody classified cannot be called.
const (
	NotCallable Access = iota
	LocalOnly
	Remote
)

// handler is the http.Handler built by NewHandler.
type handler struct {
	svc            relay.Service
	adminToken     string
	mcp            http.Handler
	bridge         map[string]*boundService
	access         func(service, method string) Access
	allowedHosts   map[string]bool
	allowedOrigins map[string]bool
	assets         fs.FS
	publicURL      string
	version        string
	log            *slog.Logger
	maxBody        int64
	now            func() time.Time
	push           relay.PushSource
	pushBeat       time.Duration
	pushHub        *pushHub
	attempts       *limiter
	sessions       *secretSet
	tickets        *secretSet
	metrics        http.Handler
	bodyTimeout    time.Duration
}

// NewHandler validates cfg and returns the relay's HTTP handler.
//
// Routes:
//
//	GET|HEAD /health                 public, no Host/Origin check
//	GET|HEAD /metrics                admin bearer token, or loopback with Host/Origin
//	/mcp                             Host, Origin, bearer (admin, agent or run token)
//	POST /api/enroll                 public (Host, Origin)
//	GET /api/push                    Host, Origin, bearer: an agent's push stream (SSE)
//	GET|POST|DELETE /bridge/session  sign-in state, sign in, sign out
//	GET /bridge/events               admin; server-sent relay:change events
//	POST /bridge/<Service>.<Method>  admin; JSON array of arguments
//	GET|HEAD anything else           the dashboard (SPA fallback to index.html)
func NewHandler(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || isNilValue(cfg.Service) {
		return nil, errors.New("web: Config.Service is required")
	}
	token := strings.TrimSpace(cfg.AdminToken)
	if token == "" {
		return nil, errors.New("web: Config.AdminToken is required")
	}
	if token != cfg.AdminToken {
		return nil, errors.New("web: Config.AdminToken has surrounding whitespace")
	}
	if cfg.MCP == nil {
		return nil, errors.New("web: Config.MCP is required")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("web: Config.MaxBodyBytes is negative (%d)", cfg.MaxBodyBytes)
	}
	h := &handler{
		svc:         cfg.Service,
		adminToken:  token,
		mcp:         cfg.MCP,
		access:      cfg.Access,
		assets:      cfg.Assets,
		version:     cfg.Version,
		log:         cfg.Logger,
		maxBody:     cfg.MaxBodyBytes,
		now:         cfg.Now,
		push:        cfg.Push,
		pushBeat:    cfg.PushHeartbeat,
		pushHub:     &pushHub{subscribe: cfg.Service.Subscribe},
		publicURL:   cfg.PublicURL,
		metrics:     cfg.Metrics,
		bodyTimeout: cfg.BodyReadTimeout,
	}
	if h.pushBeat <= 0 {
		h.pushBeat = DefaultPushHeartbeat
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.now == nil {
		h.now = time.Now
	}
	rl := DefaultRateLimit
	if cfg.RateLimit != nil {
		rl = *cfg.RateLimit
	}
	h.attempts = newLimiter(rl, h.now)
	h.sessions, h.tickets = newSecretSet(), newSecretSet()
	if h.access == nil {
		h.access = func(string, string) Access { return Remote }
	}
	hosts := cfg.AllowedHosts
	if len(hosts) == 0 {
		hosts = DefaultAllowedHosts()
	}
	var err error
	if h.allowedHosts, err = hostSet("AllowedHosts", hosts); err != nil {
		return nil, err
	}
	origins := cfg.AllowedOrigins
	if len(origins) == 0 {
		origins = hosts
	}
	if h.allowedOrigins, err = hostSet("AllowedOrigins", origins); err != nil {
		return nil, err
	}
	if h.bridge, err = bindServices(cfg.Services); err != nil {
		return nil, err
	}
	return h.recoverer(h), nil
}

// hostSet normalizes a list of hostnames into a lookup set.
func hostSet(field string, hosts []string) (map[string]bool, error) {
	set := make(map[string]bool, len(hosts))
	for _, raw := range hosts {
		n := normalizeHostname(raw)
		if n == "" {
			return nil, fmt.Errorf("web: Config.%s: %q is not a hostname", field, raw)
		}
		set[n] = true
	}
	return set, nil
}

// isNilValue reports whether v is an interface holding a nil pointer.
func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// ServeHTTP routes a request. Paths come from the request line (r.URL.Path,
// already decoded by net/http), never from the Host header.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/health" {
		h.serveHealth(w, r)
		return
	}
	if !h.bearerAllowed(w, r) {
		return
	}
	h.limitBodyRead(w, r)
	switch {
	case p == "/mcp":
		h.serveMCP(w, r)
		return
	case p == MetricsPath:
		h.serveMetrics(w, r)
		return
	}
	if !h.checkHostOrigin(w, r) {
		return
	}
	switch {
	case p == "/api" || strings.HasPrefix(p, "/api/"):
		h.serveAPI(w, r)
	case p == "/bridge" || strings.HasPrefix(p, "/bridge/"):
		h.serveBridge(w, r)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		h.serveDashboard(w, r)
	default:
		writeError(w, http.StatusNotFound, "not_found", "Nothing is served here.")
	}
}

// bearerAllowed answers 429 itself and returns false when r carries a
// bearer token that could be a guess and its client has spent its budget
// of failed attempts (on any route: /mcp, /bridge, /metrics, the push
// stream). The token is not checked then, so guessing on gets no answer at
// all; a token that could not be a guess is (limiter.mayTry).
func (h *handler) bearerAllowed(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") == "" {
		return true
	}
	spent, wait := h.attempts.spent(clientAddr(r))
	if !spent || h.attempts.mayTry(r, bearerToken(r)) {
		return true
	}
	writeLimited(w, wait)
	return false
}

// serveHealth answers GET|HEAD /health without Host or Origin checks, so
// container health checks work from anywhere.
func (h *handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	if h.svc.Healthy() {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "degraded"})
}

// serveAPI serves the public REST routes: POST /api/enroll and the push
// stream, GET /api/push.
func (h *handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == relay.PushPath {
		h.servePush(w, r)
		return
	}
	if r.URL.Path != "/api/enroll" {
		writeError(w, http.StatusNotFound, "not_found", "Nothing is served here.")
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	h.serveEnroll(w, r)
}

// recoverer turns a panic into a logged 500 internal_error.
func (h *handler) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.Error("web: panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
			if !tw.wrote {
				writeError(tw, http.StatusInternalServerError, relay.EInternal, relay.ErrorMessage(errors.New("panic")))
			}
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter remembers whether the response has started. It forwards
// Flush and exposes the underlying writer to http.ResponseController.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	if code >= 200 {
		t.wrote = true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Flush implements http.Flusher for streaming handlers (MCP, SSE).
func (t *trackingWriter) Flush() {
	t.wrote = true
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
