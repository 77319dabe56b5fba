package web_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// TestStaleTokenDoesNotLockOutLocalAgents reproduces a desktop relay where
// everything comes from 127.0.0.1: clients left with a revoked, rotated or
// unknown token retry it every second (as Claude Code, Codex and Gemini
// reconnect on their own) for a minute, while a valid agent, a worker run and
// the dashboard keep calling. Each stale token costs the address one attempt
// the first time: it is answered 401 every time, and the valid callers are
// never answered 429. Before failed tokens were remembered, every retry spent
// an attempt: one stale client spent the budget in 14 s, five in 2 s, and the
// valid calls were answered 429 from then on.
func TestStaleTokenDoesNotLockOutLocalAgents(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
	mcp, bridge := mcpWith, bridgeWith
	for _, tc := range []struct {
		name string
		// stale are the stale clients' requests, given the relay's tokens.
		stale func(toks relayTokens) []request
	}{
		{"RevokedAgentToken", func(k relayTokens) []request { return []request{mcp(k.revoked)} }},
		{"RevokedRunToken", func(k relayTokens) []request { return []request{mcp(k.oldRun)} }},
		{"UnknownAgentToken", func(k relayTokens) []request { return []request{mcp("cca_from_another_install_0123456789abcdef")} }},
		{"RotatedAdminTokenOnBridge", func(k relayTokens) []request { return []request{bridge("the-admin-token-before-rotation")} }},
		{"RotatedAdminTokenOnMetrics", func(k relayTokens) []request {
			return []request{{path: "/metrics", bearer: "the-admin-token-before-rotation"}}
		}},
		{"FiveStaleClients", func(k relayTokens) []request {
			return []request{
				mcp(k.revoked), mcp(k.oldRun), mcp("cca_unknown"), bridge("old-admin-token"),
				{path: "/metrics", bearer: "old-admin-token"},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			e := newEnv(t, envOptions{clock: clock, metrics: metrics})
			k := newRelayTokens(t, e)
			stale := tc.stale(k)
			valid := []request{mcp(k.agent), mcp(k.run), bridge(adminToken)}
			for sec := 1; sec <= 60; sec++ {
				clock.Advance(time.Second)
				for _, req := range stale {
					resp := e.do(t, req)
					if resp.status != http.StatusUnauthorized || resp.errorCode(t) != relay.EUnauthorized {
						t.Fatalf("second %d: stale token on %s: %d %s; want 401 unauthorized", sec, req.path, resp.status, resp.body)
					}
				}
				for i, req := range valid {
					if resp := e.do(t, req); resp.status != http.StatusOK {
						t.Fatalf("second %d: valid caller %d on %s: %d %s; want 200", sec, i, req.path, resp.status, resp.body)
					}
				}
			}
		})
	}
}

// relayTokens are the tokens of a test relay: a valid agent and run token,
// a revoked agent token and a run token revoked when its run ended.
type relayTokens struct {
	agent, run, revoked, oldRun string
}

func newRelayTokens(t *testing.T, e *env) relayTokens {
	t.Helper()
	ctx := context.Background()
	k := relayTokens{agent: createAgent(t, e.svc, "builder"), revoked: createAgent(t, e.svc, "gone")}
	if err := e.svc.RevokeToken(ctx, "gone"); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	_, k.run = issueRunToken(t, e.svc, "builder")
	oldTask, oldRun := issueRunToken(t, e.svc, "builder")
	if err := e.svc.RevokeRunTokens(ctx, oldTask); err != nil {
		t.Fatalf("RevokeRunTokens: %v", err)
	}
	k.oldRun = oldRun
	return k
}

// TestGuessingStillLimited ensures remembering failed tokens gives a guesser
// nothing: however new guesses and repeats are mixed, exactly Burst (10)
// distinct wrong tokens are answered 401 from one address; then every
// request with a bearer token (a repeat, a new guess, the right token) and
// sign-in get 429, and each 3 s earns exactly one more new guess.
func TestGuessingStillLimited(t *testing.T) {
	burst, every := web.DefaultRateLimit.Burst, web.DefaultRateLimit.Every
	routes := []struct {
		name string
		req  func(tok string) request
	}{
		{"MCP", mcpWith},
		{"Bridge", bridgeWith},
	}
	for _, pattern := range []struct {
		name string
		// first are sent before the new guesses; each gives what is sent
		// for new guess g (-1 is the token a guesser repeats).
		first []int
		each  func(g int) []int
	}{
		{"Distinct", nil, func(g int) []int { return []int{g} }},
		{"RepeatFirst", []int{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}, func(g int) []int { return []int{g} }},
		{"RepeatBetween", nil, func(g int) []int { return []int{g, -1} }},
		{"EachTwice", nil, func(g int) []int { return []int{g, g} }},
	} {
		guesses := pattern.first
		for g := 0; g < 30; g++ {
			guesses = append(guesses, pattern.each(g)...)
		}
		for _, route := range routes {
			t.Run(pattern.name+"/"+route.name, func(t *testing.T) {
				clock := newClock()
				e := newEnv(t, envOptions{clock: clock})
				answered := map[int]bool{} // guesses answered 401
				for _, g := range guesses {
					resp := e.do(t, route.req(guess(g)))
					switch resp.status {
					case http.StatusUnauthorized:
						answered[g] = true
					case http.StatusTooManyRequests:
					default:
						t.Fatalf("guess %d: %d %s", g, resp.status, resp.body)
					}
				}
				if len(answered) != burst {
					t.Fatalf("%d distinct wrong tokens were answered 401 (%v); want %d", len(answered), answered, burst)
				}
				for _, req := range []request{
					route.req(guess(-1)), route.req(guess(1)), route.req(guess(1000)), route.req(adminToken),
					{method: http.MethodPost, path: "/bridge/session", body: `{"token":"` + adminToken + `"}`},
				} {
					if resp := e.do(t, req); resp.status != http.StatusTooManyRequests {
						t.Fatalf("%s (bearer %q) once the budget is spent: %d; want 429", req.path, req.bearer, resp.status)
					}
				}
				for i := 0; i < 3; i++ {
					clock.Advance(every)
					if resp := e.do(t, route.req(guess(2000+i))); resp.status != http.StatusUnauthorized {
						t.Fatalf("a new guess %d after 3 s: %d; want 401", i, resp.status)
					}
					if resp := e.do(t, route.req(guess(3000+i))); resp.status != http.StatusTooManyRequests {
						t.Fatalf("a second new guess %d within the same 3 s: %d; want 429", i, resp.status)
					}
				}
			})
		}
	}
}

// guess is wrong token number g (-1: the one a guesser repeats).
func guess(g int) string {
	if g < 0 {
		return "wrong-token-repeated"
	}
	return "wrong-token-" + strconv.Itoa(g)
}

// mcpWith is an MCP request with bearer tok.
func mcpWith(tok string) request {
	return request{method: http.MethodPost, path: "/mcp", body: `{}`, bearer: tok}
}

// bridgeWith is a bridge call with bearer tok.
func bridgeWith(tok string) request {
	return request{method: http.MethodPost, path: "/bridge/Tests.Sum", body: `[1,2]`, bearer: tok}
}
