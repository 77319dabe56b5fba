package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestEnroll ensures an agent enrolls with an invite and gets the
// answer, and that its token works.
func TestEnroll(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, code := createInvite(t, e.svc, relay.InviteInput{
		ExpiresInHours: 1, MaxUses: 1, DisplayName: "Reviewer", Role: "Reviews pull requests.",
		FirstTask: &relay.FirstTask{Title: "Say hello", Instructions: "Report that you are connected."},
	})
	body := strings.Replace(enrollBody(code, "new-agent"), `"modelSlug"`, `"unknownField":{"a":[1]},"modelSlug"`, 1)
	resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: body, header: map[string]string{"Host": "localhost:4318"}})
	if resp.status != http.StatusCreated {
		t.Fatalf("status = %d: %s", resp.status, resp.body)
	}
	m := resp.json(t)
	token, _ := m["token"].(string)
	if !strings.HasPrefix(token, "cca_") {
		t.Fatalf("token = %q", token)
	}
	if got, want := m["mcpUrl"], "http://localhost:4318/mcp"; got != want {
		t.Errorf("mcpUrl = %v, want %v", got, want)
	}
	agent, _ := m["agent"].(map[string]any)
	if agent["slug"] != "new-agent" || agent["displayName"] != "Reviewer" {
		t.Errorf("agent = %v", agent)
	}
	setup, _ := m["setup"].(map[string]any)
	for _, k := range []string{"claudeCode", "codex", "generic"} {
		s, _ := setup[k].(string)
		if !strings.Contains(s, token) || !strings.Contains(s, "http://localhost:4318/mcp") {
			t.Errorf("setup.%s = %q", k, s)
		}
	}
	if _, ok := setup["json"].(map[string]any); !ok {
		t.Errorf("setup.json = %v", setup["json"])
	}
	next, _ := m["next"].([]any)
	joined := ""
	for _, n := range next {
		joined += str(n) + "\n"
	}
	if len(next) == 0 || !strings.Contains(joined, "Reviewer") || !strings.Contains(joined, "claim_next_task") {
		t.Errorf("next = %v", next)
	}
	assigned, _ := m["assignedTask"].(map[string]any)
	if assigned["title"] != "Say hello" || str(assigned["id"]) == "" {
		t.Errorf("assignedTask = %v", assigned)
	}
	if ct := resp.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("content-type = %q", ct)
	}

	p, err := e.svc.Authenticate(context.Background(), token)
	if err != nil || p.Slug != "new-agent" || p.Kind != relay.PrincipalAgent {
		t.Fatalf("Authenticate(enrolled token) = %+v, %v", p, err)
	}
	mcp := e.do(t, request{method: http.MethodPost, path: "/mcp", body: `{}`, bearer: token})
	if mcp.status != http.StatusOK || !strings.Contains(string(mcp.body), `"slug":"new-agent"`) {
		t.Fatalf("/mcp with the enrolled token: %d %s", mcp.status, mcp.body)
	}

	t.Run("HTTPSBehindProxy", func(t *testing.T) {
		_, code := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1})
		resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: enrollBody(code, "proxied"),
			header: map[string]string{"X-Forwarded-Proto": "https"}})
		if resp.status != http.StatusCreated {
			t.Fatalf("status = %d: %s", resp.status, resp.body)
		}
		if got, want := resp.json(t)["mcpUrl"], "https://"+e.host+"/mcp"; got != want {
			t.Errorf("mcpUrl = %v, want %v", got, want)
		}
		if _, ok := resp.json(t)["assignedTask"]; ok {
			t.Errorf("assignedTask present without a first task: %s", resp.body)
		}
	})
}

// TestEnrollRefused ensures bad invites answer 403, taken slugs 409 without
// using the invite up, and bad bodies 400 or 413.
func TestEnrollRefused(t *testing.T) {
	clock := newClock()
	e := newEnv(t, envOptions{maxBody: 4096, clock: clock, rateLimit: noRateLimit})
	ctx := context.Background()

	revoked, revokedCode := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1})
	if _, err := e.svc.RevokeInvite(ctx, revoked.ID); err != nil {
		t.Fatalf("RevokeInvite: %v", err)
	}
	_, usedCode := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1, MaxUses: 1})
	if resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: enrollBody(usedCode, "first-user")}); resp.status != http.StatusCreated {
		t.Fatalf("first use: %d %s", resp.status, resp.body)
	}
	_, expiredCode := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 0.001})
	_, laterCode := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1})
	clock.Advance(4 * time.Second) // past the 3.6 s of the first, within the second

	for _, tc := range []struct {
		name   string
		body   string
		status int
		code   string
		field  string // named in the message
	}{
		{"WrongCode", enrollBody("cci_wrong", "wrong-code"), 403, relay.EInvalidInvite, ""},
		{"Revoked", enrollBody(revokedCode, "revoked-code"), 403, relay.EInvalidInvite, ""},
		{"UsedUp", enrollBody(usedCode, "second-user"), 403, relay.EInvalidInvite, ""},
		{"Expired", enrollBody(expiredCode, "late-agent"), 403, relay.EInvalidInvite, ""},
		{"NotYetExpired", enrollBody(laterCode, "on-time-agent"), 201, "", ""},
		{"InvalidJSON", `{"invite":`, 400, "invalid_json", ""},
		{"NotObject", `[1,2]`, 400, relay.EInvalidRequest, "body"},
		{"WrongType", `{"invite":"cci_x","slug":"ok-slug","displayName":"X","modelSlug":"m","capabilities":"text-input"}`, 400, relay.EInvalidRequest, "capabilities"},
		{"EmptyBody", ``, 400, relay.EInvalidRequest, "invite"},
		{"BadSlug", enrollBody(usedCode, "Bad Slug!"), 400, relay.EInvalidRequest, "slug"},
		{"NoCapabilities", `{"invite":"cci_x","slug":"ok-slug","displayName":"X","modelSlug":"m","capabilities":[]}`, 400, relay.EInvalidRequest, "capabilities"},
		{"NoDisplayName", `{"invite":"cci_x","slug":"ok-slug","modelSlug":"m","capabilities":["a"]}`, 400, relay.EInvalidRequest, "displayName"},
		{"TooLarge", `{"invite":"` + strings.Repeat("x", 5000) + `"}`, 413, "payload_too_large", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: tc.body})
			if tc.status == http.StatusCreated {
				if resp.status != tc.status {
					t.Fatalf("got %d %s, want 201", resp.status, resp.body)
				}
				return
			}
			if resp.status != tc.status || resp.errorCode(t) != tc.code {
				t.Fatalf("got %d %s, want %d %s", resp.status, resp.body, tc.status, tc.code)
			}
			if msg := str(resp.json(t)["message"]); msg == "" || !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %q", msg, tc.field)
			}
		})
	}

	t.Run("TakenSlugKeepsUse", func(t *testing.T) {
		inv, code := createInvite(t, e.svc, relay.InviteInput{ExpiresInHours: 1, MaxUses: 2})
		createAgent(t, e.svc, "taken")
		resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: enrollBody(code, "taken")})
		if resp.status != http.StatusConflict || resp.errorCode(t) != relay.EAgentExists {
			t.Fatalf("got %d %s, want 409 agent_exists", resp.status, resp.body)
		}
		if uses := inviteUses(t, e.svc, inv.ID); uses != 0 {
			t.Fatalf("uses after a refused enrollment = %d, want 0", uses)
		}
		for _, slug := range []string{"free-one", "free-two"} {
			if resp := e.do(t, request{method: http.MethodPost, path: "/api/enroll", body: enrollBody(code, slug)}); resp.status != http.StatusCreated {
				t.Fatalf("enroll %s: %d %s", slug, resp.status, resp.body)
			}
		}
		if uses := inviteUses(t, e.svc, inv.ID); uses != 2 {
			t.Fatalf("uses = %d, want 2", uses)
		}
	})

	t.Run("MethodAndPath", func(t *testing.T) {
		if resp := e.do(t, request{path: "/api/enroll"}); resp.status != http.StatusMethodNotAllowed || resp.errorCode(t) != "method_not_allowed" {
			t.Errorf("GET /api/enroll: %d %s", resp.status, resp.body)
		}
		if resp := e.do(t, request{method: http.MethodPost, path: "/api/agents", body: `{}`, bearer: adminToken}); resp.status != http.StatusNotFound || resp.errorCode(t) != "not_found" {
			t.Errorf("POST /api/agents: %d %s", resp.status, resp.body)
		}
	})
}

// inviteUses returns how often invite id was used.
func inviteUses(t *testing.T, svc relay.Service, id string) int {
	t.Helper()
	invs, err := svc.ListInvites(context.Background())
	if err != nil {
		t.Fatalf("ListInvites: %v", err)
	}
	for _, inv := range invs {
		if inv.ID == id {
			return inv.Uses
		}
	}
	t.Fatalf("invite %s not listed", id)
	return 0
}
