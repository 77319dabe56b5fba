package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// TestHundredBadSignInsGet429WhileHealthAnswers floods sign-in and enroll
// with wrong credentials from one address: past the burst they are refused
// with 429 and Retry-After, and /health keeps answering.
func TestHundredBadSignInsGet429WhileHealthAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
	}{
		{"SignIn", "/bridge/session", `{"token":"not-the-admin-token"}`},
		{"Enroll", "/api/enroll", enrollBody("cci_wrong", "guess")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				limited int
				other   []int
			)
			for i := 0; i < 100; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp := e.do(t, request{method: http.MethodPost, path: tc.path, body: tc.body})
					mu.Lock()
					defer mu.Unlock()
					if resp.status == http.StatusTooManyRequests {
						limited++
						if s, err := strconv.Atoi(resp.header.Get("Retry-After")); err != nil || s < 1 {
							t.Errorf("Retry-After = %q", resp.header.Get("Retry-After"))
						}
						if code := resp.errorCode(t); code != "rate_limited" {
							t.Errorf("error = %q", code)
						}
						return
					}
					other = append(other, resp.status)
				}()
			}
			health := e.do(t, request{path: "/health"})
			wg.Wait()
			if health.status != http.StatusOK {
				t.Fatalf("/health during the flood: %d", health.status)
			}
			if limited < 80 {
				t.Fatalf("%d of 100 bad attempts were rate-limited (others: %v)", limited, other)
			}
			if resp := e.do(t, request{path: "/health"}); resp.status != http.StatusOK {
				t.Fatalf("/health after the flood: %d", resp.status)
			}
		})
	}
}

// TestSuccessfulSignInsAreNotRateLimited ensures the budget is spent only
// by failures: many good sign-ins and enrollments from one address pass.
func TestSuccessfulSignInsAreNotRateLimited(t *testing.T) {
	e := newEnv(t, envOptions{})
	for i := 0; i < 30; i++ {
		e.signIn(t)
	}
	_, code := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1})
	for i := 0; i < 30; i++ {
		resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: enrollBody(code, "agent-"+strconv.Itoa(i))})
		if resp.status != http.StatusCreated {
			t.Fatalf("enroll %d: %d %s", i, resp.status, resp.body)
		}
	}
}

// TestRateLimitRefills ensures a limited address may try again once the
// Retry-After time has passed.
func TestRateLimitRefills(t *testing.T) {
	clock := newClock()
	e := newEnv(t, envOptions{clock: clock})
	bad := request{method: http.MethodPost, path: "/bridge/session", body: `{"token":"wrong"}`}
	status := 0
	for i := 0; i < 50 && status != http.StatusTooManyRequests; i++ {
		status = e.do(t, bad).status
	}
	resp := e.do(t, bad)
	if resp.status != http.StatusTooManyRequests {
		t.Fatalf("never limited: %d", resp.status)
	}
	wait, _ := strconv.Atoi(resp.header.Get("Retry-After"))
	clock.Advance(time.Duration(wait) * time.Second)
	if resp := e.do(t, bad); resp.status != http.StatusUnauthorized {
		t.Fatalf("after Retry-After: %d %s", resp.status, resp.body)
	}
}

// browser is a minimal browser: one cookie jar for every origin (as real
// browsers share cookies across the ports of a host) and, per origin, what
// the page kept from the sign-in answer (sessionStorage).
type browser struct {
	client  *http.Client
	storage map[string]string
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{client: &http.Client{Jar: jar}, storage: map[string]string{}}
}

// do sends a request from the page of origin, the way bridge.ts does.
func (b *browser) do(t *testing.T, origin, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, origin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Crosschat-Request", "1")
	if v := b.storage[origin]; v != "" {
		req.Header.Set(web.SessionHeader, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func (b *browser) signIn(t *testing.T, origin string) {
	t.Helper()
	resp, data := b.do(t, origin, http.MethodPost, "/bridge/session", `{"token":"`+adminToken+`"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in at %s: %d %s", origin, resp.StatusCode, data)
	}
	var s struct {
		Session string `json:"session"`
	}
	_ = json.Unmarshal(data, &s)
	b.storage[origin] = s.Session
}

// TestSessionReplayedFromAnotherOriginIsRefused: the user signs in to the
// dashboard, then opens another local web server (a dev server, an agent's
// preview) on another port of the same host. Whatever the browser sends
// there, replayed to the relay, must not authenticate.
func TestSessionReplayedFromAnotherOriginIsRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	var mu sync.Mutex
	var captured http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		captured = r.Header.Clone()
		mu.Unlock()
	}))
	defer other.Close()

	b := newBrowser(t)
	b.signIn(t, e.srv.URL)
	b.do(t, other.URL, http.MethodGet, "/", "")
	mu.Lock()
	stolen := captured
	mu.Unlock()

	replay, err := http.NewRequest(http.MethodPost, e.srv.URL+"/bridge/Tests.Sum", strings.NewReader(`[1,2]`))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range stolen {
		for _, v := range vs {
			replay.Header.Add(k, v)
		}
	}
	replay.Header.Set("X-Crosschat-Request", "1")
	resp, err := http.DefaultClient.Do(replay)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("what the other origin received (%v) works at the relay: %d", stolen, resp.StatusCode)
	}
	// The signed-in page itself still works.
	if resp, data := b.do(t, e.srv.URL, http.MethodPost, "/bridge/Tests.Sum", `[1,2]`); resp.StatusCode != http.StatusOK {
		t.Fatalf("the dashboard's own call: %d %s", resp.StatusCode, data)
	}
}

// TestTwoRelaysOnOneHostDoNotSignEachOtherOut: one browser signed in to
// two relays on two ports stays signed in to both, and signing out of one
// leaves the other alone.
func TestTwoRelaysOnOneHostDoNotSignEachOtherOut(t *testing.T) {
	a, c := newEnv(t, envOptions{}), newEnv(t, envOptions{})
	b := newBrowser(t)
	b.signIn(t, a.srv.URL)
	b.signIn(t, c.srv.URL)
	for _, origin := range []string{a.srv.URL, c.srv.URL} {
		if resp, data := b.do(t, origin, http.MethodPost, "/bridge/Tests.Sum", `[1,2]`); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s after signing in to both: %d %s", origin, resp.StatusCode, data)
		}
	}
	if resp, _ := b.do(t, a.srv.URL, http.MethodDelete, "/bridge/session", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign out of the first: %d", resp.StatusCode)
	}
	if resp, _ := b.do(t, a.srv.URL, http.MethodPost, "/bridge/Tests.Sum", `[1,2]`); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the first still works after sign-out: %d", resp.StatusCode)
	}
	if resp, data := b.do(t, c.srv.URL, http.MethodPost, "/bridge/Tests.Sum", `[1,2]`); resp.StatusCode != http.StatusOK {
		t.Fatalf("signing out of the first signed out the second: %d %s", resp.StatusCode, data)
	}
}
