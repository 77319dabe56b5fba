package web_test

import (
	"net/http"
	"strconv"
	"testing"
)

// TestWrongBearersEndIn429 is N6: 40 wrong bearer tokens from one address
// on /bridge, /mcp and /metrics. They spend the same budget as sign-in:
// the first ones get 401, the rest 429 with Retry-After, and once it is
// spent even the right token is answered 429 (a right guess is not told
// apart). Sign-in from that address is limited too, and /health answers.
func TestWrongBearersEndIn429(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
	}{
		{"Bridge", http.MethodPost, "/bridge/Tests.Sum", `[1,2]`},
		{"BridgeSession", http.MethodGet, "/bridge/session", ""},
		{"MCP", http.MethodPost, "/mcp", `{}`},
		{"Metrics", http.MethodGet, "/metrics", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{metrics: metrics})
			var statuses []int
			for i := 0; i < 40; i++ {
				resp := e.do(t, request{method: tc.method, path: tc.path, body: tc.body, bearer: "wrong-token-" + strconv.Itoa(i)})
				statuses = append(statuses, resp.status)
				if resp.status == http.StatusTooManyRequests {
					if s, err := strconv.Atoi(resp.header.Get("Retry-After")); err != nil || s < 1 {
						t.Fatalf("Retry-After = %q", resp.header.Get("Retry-After"))
					}
				}
			}
			if statuses[0] == http.StatusTooManyRequests || statuses[39] != http.StatusTooManyRequests {
				t.Fatalf("statuses of 40 wrong bearers: %v; want 401s ending in 429", statuses)
			}
			limited := 0
			for _, s := range statuses {
				if s == http.StatusTooManyRequests {
					limited++
				}
			}
			if limited < 25 {
				t.Fatalf("%d of 40 wrong bearers were limited: %v", limited, statuses)
			}
			if resp := e.do(t, request{method: tc.method, path: tc.path, body: tc.body, bearer: adminToken}); resp.status != http.StatusTooManyRequests {
				t.Fatalf("the right token after the budget is spent: %d; want 429", resp.status)
			}
			if resp := e.do(t, request{method: http.MethodPost, path: "/bridge/session", body: `{"token":"` + adminToken + `"}`}); resp.status != http.StatusTooManyRequests {
				t.Fatalf("sign-in after the budget is spent: %d; want 429", resp.status)
			}
			if resp := e.do(t, request{path: "/health"}); resp.status != http.StatusOK {
				t.Fatalf("/health: %d", resp.status)
			}
		})
	}
}
