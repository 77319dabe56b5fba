package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// named is what the relay tells an agent about its address, gathered through
// the bridge the way the dashboard asks: an invite message, a token reveal
// (new agent and rotated token) and Info, each with the caller's origin.
type named struct {
	invite, created, createdSetup, rotated, info string
}

// created and enrolled number the agents the helpers make, so slugs differ.
var created, enrolled int

func nameAddresses(t *testing.T, r *app.Relay, origin string) named {
	t.Helper()
	token, err := r.Config().AdminToken(false)
	noErr(t, err)
	cl := client.New(r.Config().BaseURL(), token)
	ctx := context.Background()
	var inv app.InviteCreated
	noErr(t, cl.Call(ctx, "Invites", "CreateAt", &inv, relay.InviteInput{ExpiresInHours: 1, MaxUses: 1}, origin))
	var rev, rot app.TokenReveal
	created++
	slug := fmt.Sprintf("named-%d", created)
	noErr(t, cl.Call(ctx, "Agents", "CreateAt", &rev, relay.CreateAgentInput{Slug: slug, DisplayName: "A", ModelSlug: "m", Capabilities: []string{"x"}}, origin))
	noErr(t, cl.Call(ctx, "Agents", "RotateTokenAt", &rot, slug, origin))
	var info app.Info
	noErr(t, cl.Call(ctx, "Overview", "InfoAt", &info, origin))
	return named{invite: inv.Message, created: rev.MCPURL, createdSetup: rev.Setup.ClaudeCode, rotated: rot.MCPURL, info: info.MCPURL}
}

// Ensure invites, token reveals and Info name the address the dashboard was
// reached at (when the relay allows that origin), and the relay's own
// address otherwise: never a host name the caller did not use.
func TestAddressFollowsTheDashboardsOrigin(t *testing.T) {
	r := startRelay(t)
	port := r.Config().Port
	own := r.Config().BaseURL()
	tests := []struct {
		name, origin, want string
	}{
		{"reached at 127.0.0.1", fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", port)},
		{"reached at [::1]", fmt.Sprintf("http://[::1]:%d", port), fmt.Sprintf("http://[::1]:%d", port)},
		{"native window or CLI (no origin)", "", own},
		{"origin the relay does not allow", "http://evil.example:80", own},
		{"not an origin", "javascript:alert(1)", own},
		{"origin with a path", fmt.Sprintf("http://127.0.0.1:%d/x", port), own},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nameAddresses(t, r, tt.origin)
			if !strings.Contains(n.invite, "Relay: "+tt.want+"\n") || !strings.Contains(n.invite, tt.want+"/api/enroll") {
				t.Errorf("invite message does not name %s:\n%s", tt.want, n.invite)
			}
			for what, got := range map[string]string{"created": n.created, "rotated": n.rotated, "info": n.info} {
				if got != tt.want+"/mcp" {
					t.Errorf("%s mcpUrl %q, want %s/mcp", what, got, tt.want)
				}
			}
			if !strings.Contains(n.createdSetup, " "+tt.want+"/mcp ") {
				t.Errorf("setup snippet %q does not name %s/mcp", n.createdSetup, tt.want)
			}
		})
	}
}

// Ensure --public-url wins everywhere: invites, token reveals, Info and the
// enrollment's mcpUrl, whatever address the caller reached.
func TestAddressPublicURL(t *testing.T) {
	const public = "https://relay.example.com/crosschat"
	r := startRelay(t, func(c *config.Config) { c.PublicURL = public })
	for _, origin := range []string{"", fmt.Sprintf("http://127.0.0.1:%d", r.Config().Port)} {
		n := nameAddresses(t, r, origin)
		if !strings.Contains(n.invite, public+"/api/enroll") || strings.Contains(n.invite, "127.0.0.1") || strings.Contains(n.invite, "localhost") {
			t.Errorf("origin %q: invite message does not name only %s:\n%s", origin, public, n.invite)
		}
		if n.created != public+"/mcp" || n.rotated != public+"/mcp" || n.info != public+"/mcp" {
			t.Errorf("origin %q: mcpUrls %+v", origin, n)
		}
	}
	if got := enroll(t, r, fmt.Sprintf("127.0.0.1:%d", r.Config().Port)); got != public+"/mcp" {
		t.Fatalf("enroll mcpUrl %q, want %s/mcp", got, public)
	}
}

// Ensure an enrollment answers with the address the agent used (its Host).
func TestEnrollMCPURLFollowsHost(t *testing.T) {
	r := startRelay(t)
	port := r.Config().Port
	for _, host := range []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("localhost:%d", port), fmt.Sprintf("[::1]:%d", port)} {
		if got, want := enroll(t, r, host), "http://"+host+"/mcp"; got != want {
			t.Errorf("Host %s: mcpUrl %q, want %q", host, got, want)
		}
	}
}

// enroll makes an invite and enrolls a new agent with it over HTTP, sending
// host as the Host header; it returns the mcpUrl of the answer.
func enroll(t *testing.T, r *app.Relay, host string) string {
	t.Helper()
	inv, err := r.Services.Invites.Create(relay.InviteInput{ExpiresInHours: 1, MaxUses: 1})
	noErr(t, err)
	enrolled++
	body, _ := json.Marshal(map[string]any{"invite": inv.Code, "slug": fmt.Sprintf("enrolled-%d", enrolled), "displayName": "E", "modelSlug": "m", "capabilities": []string{"x"}})
	req, err := http.NewRequest(http.MethodPost, r.Config().BaseURL()+"/api/enroll", bytes.NewReader(body))
	noErr(t, err)
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	noErr(t, err)
	defer res.Body.Close()
	var out struct {
		MCPURL string    `json:"mcpUrl"`
		Setup  web.Setup `json:"setup"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("enroll via %s: HTTP %d, %v", host, res.StatusCode, err)
	}
	if !strings.Contains(out.Setup.ClaudeCode, " "+out.MCPURL+" ") {
		t.Fatalf("setup %q does not name %s", out.Setup.ClaudeCode, out.MCPURL)
	}
	return out.MCPURL
}
