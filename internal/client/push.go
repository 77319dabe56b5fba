package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Push stream client defaults.
const (
	// DefaultPushIdle is how long a push stream may stay silent (the relay
	// sends a heartbeat every 20 s) before the client drops it and reconnects.
	DefaultPushIdle = 65 * time.Second
	// maxPushLine bounds one SSE line (an event's JSON).
	maxPushLine = 1 << 20
)

// PushStream follows one agent's push stream (GET /api/push) and
// reconnects by itself, resuming after the last event it handed over: an
// event is never skipped and never handed over twice, across dropped
// connections and relay restarts.
type PushStream struct {
	// BaseURL is the relay, e.g. http://127.0.0.1:4318 (a trailing /mcp is ignored).
	BaseURL string
	// Token is an agent or run token, or the admin token with Agent set.
	Token string
	// Agent names the agent when Token is the admin token.
	Agent string
	// Session is the agent-CLI session the stream is for, "" for none:
	// the relay records it as live and leaves out updates on tasks another
	// session of the agent posted. SessionName is its name, when known.
	Session, SessionName string
	// After is the cursor to resume after; negative starts with what
	// arrives from now on. Cursor reports where the stream stands.
	After int64
	// OnEvent receives each event, in order. A returned error stops Run.
	OnEvent func(relay.PushEvent) error
	// OnMissed is told when events after the cursor may be missing: the
	// relay trimmed them, or wrote none before the agent's stream was first
	// opened.
	OnMissed func(cursor int64)
	// OnReady is told each time a connection is open and the relay is
	// writing the agent's events to it, with the cursor it resumes after.
	OnReady func(cursor int64)
	// Logf receives diagnostics (connects, drops, retries); nil discards.
	Logf func(format string, args ...any)
	// Idle is the silence after which the connection is dropped; 0 means DefaultPushIdle.
	Idle time.Duration
	// MaxBackoff caps the wait between reconnects; 0 means 10 s.
	MaxBackoff time.Duration
	// HTTP is the client; nil means one without a timeout (streams are long).
	HTTP *http.Client

	mu     sync.Mutex
	cursor int64
}

// Cursor is the sequence of the last event handed over (or the stream's
// starting point), -1 before the first connection when After was negative.
func (s *PushStream) Cursor() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

func (s *PushStream) setCursor(c int64) {
	s.mu.Lock()
	s.cursor = c
	s.mu.Unlock()
}

func (s *PushStream) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// errPermanent marks a refusal that reconnecting will not fix.
type errPermanent struct{ err error }

func (e errPermanent) Error() string { return e.err.Error() }
func (e errPermanent) Unwrap() error { return e.err }

// Run follows the stream until ctx ends (returning nil), OnEvent fails, or
// the relay refuses the token or the request (a *relay.Error).
func (s *PushStream) Run(ctx context.Context) error {
	if s.OnEvent == nil {
		return errors.New("push stream: OnEvent is required")
	}
	s.setCursor(s.After)
	maxWait := s.MaxBackoff
	if maxWait <= 0 {
		maxWait = 10 * time.Second
	}
	wait := 250 * time.Millisecond
	for {
		got, err := s.once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var perm errPermanent
		if errors.As(err, &perm) {
			return perm.err
		}
		if got {
			wait = 250 * time.Millisecond
		}
		switch {
		case connRefused(err):
			// The usual case while the relay restarts: said plainly.
			s.logf("push stream: no relay is running at %s; reconnecting in %s", s.BaseURL, wait)
		case err != nil:
			s.logf("push stream: %v; reconnecting in %s", err, wait)
		default:
			s.logf("push stream: connection closed; reconnecting in %s", wait)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, maxWait)
	}
}

// streamURL builds the request URL for the current cursor.
func (s *PushStream) streamURL() (string, error) {
	base := strings.TrimRight(strings.TrimSpace(s.BaseURL), "/")
	base = strings.TrimSuffix(base, "/mcp")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("relay URL %q: want http(s)://host:port", s.BaseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/") + relay.PushPath
	q := url.Values{}
	if c := s.Cursor(); c >= 0 {
		q.Set("after", strconv.FormatInt(c, 10))
	}
	if s.Agent != "" {
		q.Set("agent", s.Agent)
	}
	if s.Session != "" {
		q.Set(relay.LiveSessionParam, s.Session)
		if s.SessionName != "" {
			q.Set(relay.LiveSessionNameParam, s.SessionName)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// once runs one connection; got reports whether it was established.
func (s *PushStream) once(ctx context.Context) (got bool, err error) {
	target, err := s.streamURL()
	if err != nil {
		return false, errPermanent{err}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, target, nil)
	if err != nil {
		return false, errPermanent{fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Accept", "text/event-stream")
	hc := s.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e relay.Error
		if json.Unmarshal(data, &e) == nil && e.Code != "" && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			return false, errPermanent{&e}
		}
		return false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}

	// A watchdog drops a connection that went silent (a half-open TCP
	// connection after a network change never reports an error).
	idle := s.Idle
	if idle <= 0 {
		idle = DefaultPushIdle
	}
	watchdog := time.AfterFunc(idle, cancel)
	defer watchdog.Stop()

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxPushLine)
	var event, data string
	for sc.Scan() {
		watchdog.Reset(idle)
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data += value
			}
			continue
		}
		if event == "" && data == "" {
			continue
		}
		if err := s.dispatch(event, data); err != nil {
			return true, err
		}
		got = true
		event, data = "", ""
	}
	if err := sc.Err(); err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return got, fmt.Errorf("no data for %s", idle)
		}
		return got, err
	}
	return got, nil
}

// dispatch handles one complete SSE event.
func (s *PushStream) dispatch(event, data string) error {
	switch event {
	case relay.PushEventReady:
		var r struct {
			Cursor int64 `json:"cursor"`
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return fmt.Errorf("bad ready event: %w", err)
		}
		switch c := s.Cursor(); {
		case c < 0:
			s.setCursor(r.Cursor)
		case r.Cursor < c:
			// The relay's journal ends before this cursor: it is another
			// relay's, or this one's before its data was reset.
			s.logf("push stream: cursor %d is past this relay's newest event; reading its events from %d", c, r.Cursor)
			s.setCursor(r.Cursor)
		}
		s.logf("push stream: connected after event %d (newer events follow)", s.Cursor())
		if s.OnReady != nil {
			s.OnReady(s.Cursor())
		}
	case relay.PushEventMissed:
		if s.OnMissed != nil {
			s.OnMissed(s.Cursor())
		}
	case relay.PushEventTask, relay.PushEventUpdate:
		var e relay.PushEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return fmt.Errorf("bad %s event: %w", event, err)
		}
		if e.Sequence <= s.Cursor() {
			return nil // already handed over
		}
		if err := s.OnEvent(e); err != nil {
			return errPermanent{err}
		}
		s.setCursor(e.Sequence)
	}
	return nil
}
