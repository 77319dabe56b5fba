package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// TestBridgeAuth ensures the bridge wants the admin (session header or
// bearer), refuses agent tokens and cookies, and that sign-out and expiry
// end a session.
func TestBridgeAuth(t *testing.T) {
	clock := newClock()
	e := newEnv(t, envOptions{clock: clock})
	agentTok := createAgent(t, e.svc, "some-agent")

	t.Run("SessionStateSignedOut", func(t *testing.T) {
		resp := e.do(t, request{path: "/bridge/session"})
		m := resp.json(t)
		if resp.status != http.StatusOK || m["authenticated"] != false || m["version"] != "1.2.3-test" {
			t.Fatalf("got %d %s", resp.status, resp.body)
		}
	})

	for _, tc := range []struct {
		name string
		req  request
	}{
		{"NoAuth", request{}},
		{"AgentToken", request{bearer: agentTok}},
		{"WrongBearer", request{bearer: "nope"}},
		{"ForgedCookie", request{cookies: []*http.Cookie{{Name: "crosschat_session", Value: "99999999999999.forged"}}}},
		{"ExpiredCookie", request{cookies: []*http.Cookie{{Name: "crosschat_session", Value: "1000.x"}}}},
	} {
		t.Run("Refuse"+tc.name, func(t *testing.T) {
			req := tc.req
			req.method, req.path, req.body = http.MethodPost, "/bridge/Tests.Sum", `[1,2]`
			req.header = map[string]string{"X-Crosschat-Request": "1"}
			resp := e.do(t, req)
			m := resp.json(t)
			if resp.status != http.StatusUnauthorized || m["error"] != "unauthorized" || m["message"] != "Sign in with the admin token." {
				t.Fatalf("got %d %s", resp.status, resp.body)
			}
		})
	}

	t.Run("SignInWrongToken", func(t *testing.T) {
		resp := e.do(t, request{method: http.MethodPost, path: "/bridge/session", body: `{"token":"wrong"}`})
		if resp.status != http.StatusUnauthorized || resp.errorCode(t) != "invalid_token" {
			t.Fatalf("got %d %s", resp.status, resp.body)
		}
		if len(resp.header.Values("Set-Cookie")) != 0 {
			t.Errorf("cookie set on a failed sign-in")
		}
	})
	t.Run("SignInBadBody", func(t *testing.T) {
		for body, code := range map[string]string{`{"token":`: "invalid_json", `{"token":""}`: "invalid_request", `{"token":5}`: "invalid_request"} {
			resp := e.do(t, request{method: http.MethodPost, path: "/bridge/session", body: body})
			if resp.status != http.StatusBadRequest || resp.errorCode(t) != code {
				t.Errorf("%s: got %d %s, want 400 %s", body, resp.status, resp.body, code)
			}
		}
	})

	var session string
	t.Run("SignIn", func(t *testing.T) {
		resp := e.do(t, request{method: http.MethodPost, path: "/bridge/session", body: `{"token":"  ` + adminToken + `  "}`})
		m := resp.json(t)
		if resp.status != http.StatusOK || m["authenticated"] != true {
			t.Fatalf("got %d %s", resp.status, resp.body)
		}
		if len(resp.header.Values("Set-Cookie")) != 0 {
			t.Errorf("sign-in set a cookie: %q", resp.header.Values("Set-Cookie"))
		}
		session, _ = m["session"].(string)
		if len(session) < 40 {
			t.Fatalf("session value %q", session)
		}
	})
	if session == "" {
		t.Fatal("no session")
	}

	for _, tc := range []struct {
		name   string
		req    request
		status int
	}{
		{"SessionHeader", request{session: session}, 200},
		{"Bearer", request{bearer: adminToken}, 200},
		{"AgentBearerAndSession", request{bearer: agentTok, session: session}, 200},
		{"SessionAsCookie", request{cookies: []*http.Cookie{{Name: "crosschat_session", Value: session}}}, 401},
		{"WrongSession", request{session: session + "x"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.method, req.path, req.body = http.MethodPost, "/bridge/Tests.Sum", `[40,2]`
			resp := e.do(t, req)
			if resp.status != tc.status {
				t.Fatalf("got %d %s, want %d", resp.status, resp.body, tc.status)
			}
			if tc.status == 200 && strings.TrimSpace(string(resp.body)) != "42" {
				t.Fatalf("body = %s, want 42", resp.body)
			}
		})
	}

	t.Run("SessionStateSignedIn", func(t *testing.T) {
		for _, req := range []request{{session: session}, {bearer: adminToken}} {
			req.path = "/bridge/session"
			if resp := e.do(t, req); resp.json(t)["authenticated"] != true {
				t.Errorf("got %s", resp.body)
			}
		}
	})

	t.Run("SessionExpires", func(t *testing.T) {
		fresh := e.signIn(t)
		clock.Advance(12*time.Hour + time.Second)
		resp := e.do(t, request{method: http.MethodPost, path: "/bridge/Tests.Sum", body: `[1,1]`, session: fresh})
		if resp.status != http.StatusUnauthorized {
			t.Fatalf("expired session: %d %s", resp.status, resp.body)
		}
		if resp := e.do(t, request{path: "/bridge/session", session: fresh}); resp.json(t)["authenticated"] != false {
			t.Fatalf("expired session counts as signed in: %s", resp.body)
		}
		session = e.signIn(t)
	})

	t.Run("SignOutRevokes", func(t *testing.T) {
		other := e.signIn(t)
		resp := e.do(t, request{method: http.MethodDelete, path: "/bridge/session", session: session})
		if resp.status != http.StatusOK || resp.json(t)["authenticated"] != false {
			t.Fatalf("got %d %s", resp.status, resp.body)
		}
		if resp := e.do(t, request{method: http.MethodPost, path: "/bridge/Tests.Sum", body: `[1,1]`, session: session}); resp.status != http.StatusUnauthorized {
			t.Fatalf("signed-out session still works: %d", resp.status)
		}
		// Another tab's (or another relay's) session is not signed out.
		if resp := e.do(t, request{method: http.MethodPost, path: "/bridge/Tests.Sum", body: `[1,1]`, session: other}); resp.status != http.StatusOK {
			t.Fatalf("another session was signed out: %d", resp.status)
		}
	})
}

// TestBridgeCalls ensures arguments are decoded by position, results and
// errors are mapped, and unknown methods are 404.
func TestBridgeCalls(t *testing.T) {
	logs := &testkit.Buffer{}
	e := newEnv(t, envOptions{maxBody: 2048, logs: logs})
	createAgent(t, e.svc, "known")
	for _, tc := range []struct {
		name   string
		target string
		body   string
		status int
		want   string // the exact body for 200, the error code otherwise
		field  string // named in the error message
	}{
		{"Value", "Tests.Echo", `[2,"ab"]`, 200, `"abab"`, ""},
		{"FewerArgsAreZero", "Tests.Echo", `[3]`, 200, `""`, ""},
		{"EmptyBodyIsNoArgs", "Tests.Sum", ``, 200, `0`, ""},
		{"NullBodyIsNoArgs", "Tests.Sum", `null`, 200, `0`, ""},
		{"ValueOnly", "Tests.Sum", `[1,2]`, 200, `3`, ""},
		{"NoResults", "Tests.Nothing", `[]`, 200, `null`, ""},
		{"ErrorOnlyNil", "Tests.Check", `[false]`, 200, `null`, ""},
		{"ErrorOnlyDomain", "Tests.Check", `[true]`, 409, relay.EInvalidTaskState, ""},
		{"StructArg", "Tests.Validate", `[{"slug":"  Mixed-Case ","displayName":"D","modelSlug":"m","capabilities":["b","a","b"]}]`, 200,
			`{"slug":"mixed-case","displayName":"D","modelSlug":"m","capabilities":["a","b"],"kind":"agent"}`, ""},
		{"StructArgValidation", "Tests.Validate", `[{"slug":"x"}]`, 400, relay.EInvalidRequest, "slug"},
		{"DomainError", "Tests.Agent", `["nobody"]`, 404, relay.EUnknownAgent, ""},
		{"StoreValue", "Tests.Agent", `["known"]`, 200, "", ""},
		{"ContextRefused", "Tests.Who", `[]`, 500, relay.EInternal, ""},
		{"InternalErrorHidden", "Tests.Broken", `[]`, 500, relay.EInternal, ""},
		{"PanicRecovered", "Tests.Explode", `[]`, 500, relay.EInternal, ""},
		{"UnsupportedShape", "Tests.Three", `[]`, 500, relay.EInternal, ""},
		{"TooManyArgs", "Tests.Sum", `[1,2,3]`, 400, relay.EInvalidRequest, "2 arguments"},
		{"WrongArgType", "Tests.Sum", `[1,"two"]`, 400, relay.EInvalidRequest, "args[1]"},
		{"WrongFieldType", "Tests.Validate", `[{"capabilities":"a"}]`, 400, relay.EInvalidRequest, "args[0].capabilities"},
		{"NotArray", "Tests.Sum", `{"a":1}`, 400, relay.EInvalidRequest, "array"},
		{"InvalidJSON", "Tests.Sum", `[1,`, 400, "invalid_json", ""},
		{"TrailingGarbage", "Tests.Sum", `[1] [2]`, 400, "invalid_json", ""},
		{"TooLarge", "Tests.Echo", `[1,"` + strings.Repeat("x", 3000) + `"]`, 413, "payload_too_large", ""},
		{"UnknownMethod", "Tests.Nope", `[]`, 404, "not_found", ""},
		{"UnexportedMethod", "Tests.echo", `[]`, 404, "not_found", ""},
		{"UnknownService", "Nope.Sum", `[]`, 404, "not_found", ""},
		{"NoDot", "TestsSum", `[]`, 404, "not_found", ""},
		{"Nested", "Tests.Sum/x", `[]`, 404, "not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: http.MethodPost, path: "/bridge/" + tc.target, body: tc.body, bearer: adminToken})
			if resp.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", resp.status, tc.status, resp.body)
			}
			resp.wantHeaders(t, map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"})
			if tc.status == 200 {
				if tc.want != "" && strings.TrimSpace(string(resp.body)) != tc.want {
					t.Fatalf("body = %s, want %s", resp.body, tc.want)
				}
				return
			}
			m := resp.json(t)
			if m["error"] != tc.want {
				t.Fatalf("error = %v, want %s (%s)", m["error"], tc.want, resp.body)
			}
			if !strings.Contains(str(m["message"]), tc.field) {
				t.Errorf("message %q does not name %q", m["message"], tc.field)
			}
			if strings.Contains(string(resp.body), "secret") {
				t.Errorf("internal error text leaked: %s", resp.body)
			}
		})
	}

	t.Run("InternalErrorsLogged", func(t *testing.T) {
		out := logs.String()
		for _, want := range []string{"Tests.Broken", "disk on fire", "Tests.Three", "unsupported signature", "panic"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("GetIsNotAllowed", func(t *testing.T) {
		resp := e.do(t, request{path: "/bridge/Tests.Sum", bearer: adminToken})
		if resp.status != http.StatusMethodNotAllowed || resp.header.Get("Allow") != "POST" {
			t.Fatalf("got %d %s", resp.status, resp.body)
		}
	})
}

// TestBridgeLocalOnly ensures local-only methods refuse proxied and remote
// requests, even with the admin token.
func TestBridgeLocalOnly(t *testing.T) {
	localOnly := func(service, method string) bool { return service == "Tests" && method == "Local" }
	e := newEnv(t, envOptions{localOnly: localOnly})
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"Loopback", nil, 200},
		{"XForwardedFor", map[string]string{"X-Forwarded-For": "127.0.0.1"}, 403},
		{"Forwarded", map[string]string{"Forwarded": "for=127.0.0.1"}, 403},
		{"XRealIP", map[string]string{"X-Real-IP": "127.0.0.1"}, 403},
		{"Via", map[string]string{"Via": "1.1 proxy"}, 403},
		{"XForwardedHost", map[string]string{"X-Forwarded-Host": "localhost"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: http.MethodPost, path: "/bridge/Tests.Local", body: `[]`, bearer: adminToken, header: tc.header})
			if resp.status != tc.status {
				t.Fatalf("got %d %s, want %d", resp.status, resp.body, tc.status)
			}
			if tc.status == 403 && resp.errorCode(t) != "local_only" {
				t.Fatalf("code = %s", resp.errorCode(t))
			}
		})
	}
	t.Run("OtherMethodsFromProxy", func(t *testing.T) {
		resp := e.do(t, request{method: http.MethodPost, path: "/bridge/Tests.Sum", body: `[1,1]`, bearer: adminToken, header: map[string]string{"X-Forwarded-For": "10.0.0.1"}})
		if resp.status != http.StatusOK {
			t.Fatalf("got %d %s", resp.status, resp.body)
		}
	})

	h := newHandler(t, e.svc, envOptions{localOnly: localOnly})
	for _, remote := range []string{"192.0.2.7:5555", "[2001:db8::1]:5555", "127.0.0.2:5555", "[::ffff:127.0.0.1]:5555", "garbage"} {
		t.Run("Remote"+remote, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://localhost/bridge/Tests.Local", strings.NewReader(`[]`))
			r.RemoteAddr = remote
			r.Header.Set("Authorization", "Bearer "+adminToken)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			want := http.StatusForbidden
			if remote == "[::ffff:127.0.0.1]:5555" {
				want = http.StatusOK
			}
			if w.Code != want {
				t.Fatalf("status = %d, want %d: %s", w.Code, want, w.Body)
			}
		})
	}
}
