package web_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// stream is an open /bridge/events response read line by line in the
// background.
type stream struct {
	resp  *http.Response
	lines chan string
	// done is closed when the body ends.
	done chan struct{}
}

// openStream opens the change stream with the given auth.
func openStream(t *testing.T, e *env, req request) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	path := req.path
	if path == "" {
		path = "/bridge/events"
	}
	req.path, req.method, req.body = path, http.MethodGet, ""
	r := e.newRequest(t, ctx, req)
	resp, err := e.srv.Client().Do(r)
	if err != nil {
		t.Fatalf("GET /bridge/events: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &stream{resp: resp, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

// waitFor reads lines until one satisfies match, failing after timeout.
// It returns the lines read, the matching one last.
func (s *stream) waitFor(t *testing.T, timeout time.Duration, match func(string) bool) []string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var seen []string
	for {
		select {
		case line := <-s.lines:
			seen = append(seen, line)
			if match(line) {
				return seen
			}
		case <-s.done:
			t.Fatalf("stream ended before a match; read %q", seen)
		case <-deadline.C:
			t.Fatalf("no match within %v; read %q", timeout, seen)
		}
	}
}

// TestEvents ensures the change stream sends retry, then a relay:change
// event for a committed change.
func TestEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		name string
		req  func() request
	}{
		{"Bearer", func() request { return request{bearer: adminToken} }},
		{"Session", func() request { return request{session: e.signIn(t)} }},
		{"Ticket", func() request { return request{path: "/bridge/events?ticket=" + ticket(t, e, e.signIn(t))} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStream(t, e, tc.req())
			if s.resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d", s.resp.StatusCode)
			}
			for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
				if got := s.resp.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			s.waitFor(t, 5*time.Second, func(l string) bool { return l == "retry: 3000" })

			slug := "streamed-" + strings.ToLower(tc.name)
			createAgent(t, e.svc, slug)
			var event string
			lines := s.waitFor(t, 5*time.Second, func(l string) bool {
				if strings.HasPrefix(l, "event: ") {
					event = l
				}
				return strings.HasPrefix(l, "data: ") && strings.Contains(l, `"slug":"`+slug+`"`)
			})
			if event != "event: relay:change" {
				t.Fatalf("event line = %q (read %q)", event, lines)
			}
		})
	}

	t.Run("TicketIsOneTime", func(t *testing.T) {
		tk := ticket(t, e, e.signIn(t))
		s := openStream(t, e, request{path: "/bridge/events?ticket=" + tk})
		if s.resp.StatusCode != http.StatusOK {
			t.Fatalf("first use: %d", s.resp.StatusCode)
		}
		if resp := e.do(t, request{path: "/bridge/events?ticket=" + tk}); resp.status != http.StatusUnauthorized {
			t.Fatalf("second use: %d", resp.status)
		}
	})
	t.Run("Unauthorized", func(t *testing.T) {
		resp := e.do(t, request{path: "/bridge/events", bearer: createAgent(t, e.svc, "stream-agent")})
		if resp.status != http.StatusUnauthorized {
			t.Fatalf("status = %d: %s", resp.status, resp.body)
		}
	})
	t.Run("PostNotAllowed", func(t *testing.T) {
		resp := e.do(t, request{method: http.MethodPost, path: "/bridge/events", bearer: adminToken})
		if resp.status != http.StatusMethodNotAllowed {
			t.Fatalf("status = %d: %s", resp.status, resp.body)
		}
	})
}

// closable hands out subscriptions the test can end, as the store does
// when it closes or a subscriber falls behind.
type closable struct {
	relay.Service
	mu   sync.Mutex
	subs []chan relay.Change
	// cancelled counts subscriptions the handler ended.
	cancelled int
}

func (c *closable) Subscribe(int) (<-chan relay.Change, func()) {
	ch := make(chan relay.Change, 1)
	c.mu.Lock()
	c.subs = append(c.subs, ch)
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		c.cancelled++
		c.mu.Unlock()
	}
}

// closeAll ends every subscription from the service side.
func (c *closable) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.subs {
		close(ch)
	}
	c.subs = nil
}

// TestEventsEnd ensures the stream ends when the subscription closes and
// that the handler ends the subscription when the client leaves.
func TestEventsEnd(t *testing.T) {
	c := &closable{}
	e := newEnv(t, envOptions{wrap: func(s relay.Service) relay.Service { c.Service = s; return c }})

	s := openStream(t, e, request{bearer: adminToken})
	s.waitFor(t, 5*time.Second, func(l string) bool { return l == "retry: 3000" })
	c.closeAll()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open after the subscription closed")
	}

	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/bridge/events", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := e.srv.Client().Do(r)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		n := c.cancelled
		c.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions ended = %d, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ticket gets a one-time change-stream ticket with a session.
func ticket(t *testing.T, e *env, session string) string {
	t.Helper()
	resp := e.do(t, request{method: http.MethodPost, path: "/bridge/events/ticket", session: session})
	tk, _ := resp.json(t)["ticket"].(string)
	if resp.status != http.StatusOK || tk == "" {
		t.Fatalf("ticket: %d %s", resp.status, resp.body)
	}
	return tk
}
