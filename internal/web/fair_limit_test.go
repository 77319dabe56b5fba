package web_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Ensure every loopback address counts as one client: wrong tokens sent
// from 127.0.0.2 and then 127.0.0.3 (a process picks any of 127.0.0.0/8
// with `curl --interface`) share one budget, so the tenth wrong token in
// all is the last answered 401, wherever it comes from, and 127.0.0.1
// (and ::1) are limited with them. Before, each address had a budget of
// its own: ten 401s from each.
func TestLoopbackIsOneClient(t *testing.T) {
	burst := web.DefaultRateLimit.Burst
	e := newEnv(t, envOptions{clock: newClock()})
	from := []string{"127.0.0.2", "127.0.0.3", "127.0.0.1", "127.1.2.3"}
	for i := 0; i < burst; i++ {
		req := mcpWith("wrong-token-" + strconv.Itoa(i))
		req.from = from[i%2]
		if resp := e.do(t, req); resp.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d from %s: %d; want 401", i, req.from, resp.status)
		}
	}
	for _, addr := range from {
		req := mcpWith("wrong-token-after-" + addr)
		req.from = addr
		if resp := e.do(t, req); resp.status != http.StatusTooManyRequests {
			t.Errorf("a wrong token from %s once loopback spent its budget: %d; want 429", addr, resp.status)
		}
	}
	if resp := e.do(t, request{method: http.MethodPost, path: "/bridge/session", body: `{"token":"a-guess"}`, from: "127.0.0.9"}); resp.status != http.StatusTooManyRequests {
		t.Errorf("sign-in from 127.0.0.9 once loopback spent its budget: %d; want 429", resp.status)
	}
}

// Ensure wrong tokens from one process cannot lock a valid token out:
// once a flood of wrong tokens (guesses and stale ones, from loopback) has
// spent the budget, a valid agent token and a valid run token (new to the
// relay: a run that starts meanwhile), the relay's own admin token (the
// CLI verbs') and an invite code are still looked at and answered, and a
// token of the operator's own choosing (CROSSCHAT_API_TOKEN, which may be
// short enough to guess) works once it has worked from this client before
// the flood. Guessing stays limited: a new guess of any other shape, and
// that chosen token where it never worked before, get 429 before they are
// looked at. Before, every request with a bearer token got 429.
func TestWrongTokensDoNotLockOutValidTokens(t *testing.T) {
	generated := relay.NewAdminToken()
	for _, tc := range []struct {
		name, admin string
		// usedBefore: the admin token was used from loopback before the flood.
		usedBefore bool
		adminAfter int
	}{
		{"generated admin token", generated, false, http.StatusOK},
		{"chosen admin token, used before", adminToken, true, http.StatusOK},
		{"chosen admin token, new", adminToken, false, http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			e := newEnv(t, envOptions{clock: clock, adminToken: tc.admin})
			k := newRelayTokens(t, e)
			if tc.usedBefore {
				if resp := e.do(t, bridgeWith(tc.admin)); resp.status != http.StatusOK {
					t.Fatalf("the admin token before the flood: %d", resp.status)
				}
			}
			for i := 0; i < 40; i++ {
				for _, tok := range []string{"wrong-token-" + strconv.Itoa(i), relay.NewAgentToken(), k.revoked} {
					req := mcpWith(tok)
					req.from = "127.0.0." + strconv.Itoa(2+i%3)
					if resp := e.do(t, req); resp.status != http.StatusUnauthorized && resp.status != http.StatusTooManyRequests {
						t.Fatalf("a wrong token: %d %s", resp.status, resp.body)
					}
				}
			}
			if resp := e.do(t, mcpWith("wrong-token-new")); resp.status != http.StatusTooManyRequests {
				t.Fatalf("a new guess after the flood: %d; want 429", resp.status)
			}
			_, freshRun := issueRunToken(t, e.svc, "builder")
			for name, req := range map[string]request{"agent": mcpWith(k.agent), "run started before": mcpWith(k.run), "run started after": mcpWith(freshRun)} {
				if resp := e.do(t, req); resp.status != http.StatusOK {
					t.Errorf("the valid %s token after the flood: %d %s; want 200", name, resp.status, resp.body)
				}
			}
			if resp := e.do(t, bridgeWith(tc.admin)); resp.status != tc.adminAfter {
				t.Errorf("the admin token after the flood: %d; want %d", resp.status, tc.adminAfter)
			}
			_, code := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1})
			if resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: enrollBody(code, "newcomer")}); resp.status != http.StatusOK &&
				resp.status != http.StatusCreated {
				t.Errorf("enrolling with a valid invite after the flood: %d %s", resp.status, resp.body)
			}
		})
	}
}
