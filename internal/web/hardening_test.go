package web_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
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
