package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// embedding maps the NATS address of each relay a test started embedding
// NATS to that relay (see ownInvite).
var embedding sync.Map

// ownInvite gives each relay a test starts an invite of its own: the URL of
// an invite of a relay the test started is replaced by a new invite of that
// relay, as its operator would run `mesh invite` once per relay (an invite
// lets one relay in, once).
func ownInvite(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || u.User.Username() != "crosschat" {
		return raw
	}
	v, ok := embedding.Load(u.Host)
	if !ok {
		return raw
	}
	inv, err := v.(*app.Relay).Services.Mesh.Invite()
	noErr(t, err)
	return inv.URL
}

// startMeshRelay starts a relay in a mesh: embedding NATS when urls is empty.
func startMeshRelay(t *testing.T, name string, urls ...string) *app.Relay {
	t.Helper()
	return startMeshRelayWith(t, app.StartOptions{Version: "test"}, name, urls...)
}

// startMeshRelayWith is startMeshRelay with opts (a test clock).
func startMeshRelayWith(t *testing.T, opts app.StartOptions, name string, urls ...string) *app.Relay {
	t.Helper()
	cfg := apptest.Config(filepath.Join(t.TempDir(), "data"))
	cfg.OperatorSlug = "operator-" + name
	urls = slices.Clone(urls)
	for i := range urls {
		urls[i] = ownInvite(t, urls[i])
	}
	cfg.Mesh = config.Mesh{URLs: urls, Name: name, Replicas: 1}
	if len(urls) == 0 {
		cfg.Mesh.Embed = "127.0.0.1:-1"
	}
	r := apptest.Start(t, cfg, opts)
	waitFor(t, func() bool {
		st, err := r.Services.Mesh.Status()
		return err == nil && st.Ready
	}, name+" joined the mesh")
	if st, err := r.Services.Mesh.Status(); err == nil && st.Embedded != "" {
		if u, err := url.Parse(st.Embedded); err == nil {
			embedding.Store(u.Host, r)
			t.Cleanup(func() { embedding.CompareAndDelete(u.Host, r) })
		}
	}
	return r
}

// startMeshPair starts relay-a, embedding NATS, and relay-b joined to it
// with the URL of relay-a's mesh invite. Neither trusts the other yet.
func startMeshPair(t *testing.T) (a, b *app.Relay) {
	t.Helper()
	a = startMeshRelay(t, "relay-a")
	inv, err := a.Services.Mesh.Invite()
	noErr(t, err)
	return a, startMeshRelay(t, "relay-b", inv.URL)
}

// startTrustedPair is startMeshPair with each relay's operator admitting the
// other (Services.Mesh.Trust) once it is seen.
func startTrustedPair(t *testing.T) (a, b *app.Relay) {
	t.Helper()
	a, b = startMeshPair(t)
	for _, p := range []struct {
		r     *app.Relay
		other string
	}{{a, "relay-b"}, {b, "relay-a"}} {
		waitFor(t, func() bool {
			_, err := p.r.Services.Mesh.Trust(p.other, "")
			return err == nil
		}, p.other+" trusted")
	}
	return a, b
}

// waitListed waits until list_agents in s (offline agents included) shows
// the agent slug on the relay named relayName.
func waitListed(t *testing.T, s *mcpSession, slug, relayName string) {
	t.Helper()
	waitFor(t, func() bool {
		var listed struct{ Agents []relay.Agent }
		s.call("list_agents", map[string]any{"includeOffline": true}, &listed)
		for _, ag := range listed.Agents {
			if ag.Slug == slug && ag.Relay == relayName {
				return true
			}
		}
		return false
	}, "list_agents shows "+slug+" on "+relayName)
}

// mcpSession is a real MCP client for one agent token.
type mcpSession struct {
	t *testing.T
	c *client.Client
}

func newSession(t *testing.T, r *app.Relay, token string) *mcpSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialMCP(ctx, r.Config().MCPURL(), token, "mesh-test")
	noErr(t, err)
	t.Cleanup(func() { c.Close() })
	return &mcpSession{t: t, c: c}
}

// dialMCP connects a real MCP client to url with token, named name, and
// initializes the session; the caller closes it.
func dialMCP(ctx context.Context, url, token, name string) (*client.Client, error) {
	trans, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(trans)
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if err := c.Start(ctx); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if _, err := c.Initialize(ctx, req); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// toolRequest is a tools/call request for name with args.
func toolRequest(name string, args any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// try runs a tool and returns its result as it is, an error result included.
func (s *mcpSession) try(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.c.CallTool(ctx, toolRequest(name, args))
}

// call runs a tool and decodes its structured result into out.
func (s *mcpSession) call(name string, args map[string]any, out any) {
	s.t.Helper()
	res, err := s.try(name, args)
	noErr(s.t, err)
	if res.IsError {
		s.t.Fatalf("%s: %+v", name, res.Content)
	}
	b, err := json.Marshal(res.StructuredContent)
	noErr(s.t, err)
	if out != nil {
		noErr(s.t, json.Unmarshal(b, out))
	}
}

func TestMeshThroughMCP(t *testing.T) {
	a, b := startMeshPair(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	// Each operator trusts the other relay with the CLI, once it is seen.
	for _, p := range []struct {
		r     *app.Relay
		other string
	}{{a, "relay-b"}, {b, "relay-a"}} {
		loc := []string{"--port", strconv.Itoa(p.r.Config().Port), "--data-dir", p.r.Config().DataDir}
		last := ""
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			out, errs, code := run(t, append([]string{"mesh", "trust", p.other}, loc...)...)
			if code == 0 && strings.Contains(out, "is trusted") {
				break
			}
			last = strconv.Itoa(code) + " " + out + " " + errs
			if time.Now().After(deadline) {
				t.Fatalf("mesh trust %s: %s", p.other, last)
			}
		}
		out, _, code := run(t, append([]string{"mesh", "relays", "--json"}, loc...)...)
		var rs []mesh.RelayInfo
		if code != 0 || json.Unmarshal([]byte(out), &rs) != nil || len(rs) != 2 || rs[1].Name != p.other || rs[1].State != relay.RelayTrusted || !strings.HasPrefix(rs[1].Fingerprint, "SHA256:") {
			t.Fatalf("mesh relays --json: %d %s", code, out)
		}
		// --fingerprint pins exactly that key: one the relay does not show is refused.
		_, errs, code := run(t, append([]string{"mesh", "trust", p.other, "--fingerprint", "SHA256:not-its-key"}, loc...)...)
		if code == 0 || !strings.Contains(errs, "does not show the key SHA256:not-its-key") {
			t.Fatalf("mesh trust with a wrong fingerprint: %d %s", code, errs)
		}
		out, _, code = run(t, append([]string{"mesh", "trust", p.other, "--fingerprint", rs[1].Fingerprint}, loc...)...)
		if code != 0 || !strings.Contains(out, "is trusted; key "+rs[1].Fingerprint) {
			t.Fatalf("mesh trust with its fingerprint: %d %s", code, out)
		}
	}
	alice, err := a.Services.Agents.Create(relay.CreateAgentInput{Slug: "alice", DisplayName: "Alice", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	bob, err := b.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	// The dashboard's create claims the slug mesh-wide too.
	if _, err := a.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob 2", ModelSlug: "m", Capabilities: []string{"text-output"}}); err == nil || !strings.Contains(err.Error(), "relay-b") {
		t.Fatalf("creating bob on A = %v; want a refusal naming relay-b", err)
	}
	sa, sb := newSession(t, a, alice.Token), newSession(t, b, bob.Token)
	sb.call("heartbeat", map[string]any{}, nil)

	waitListed(t, sa, "bob", "relay-b")

	var posted relay.Task
	sa.call("post_task", map[string]any{"recipientSlug": "bob", "title": "Across", "instructions": "Do it on B."}, &posted)
	var claimed struct{ Task *relay.Task }
	sb.call("claim_next_task", map[string]any{"waitMs": 20000}, &claimed)
	if claimed.Task == nil || claimed.Task.ID != posted.ID {
		t.Fatalf("claim on B = %+v; want %s", claimed.Task, posted.ID)
	}
	sb.call("report_task", map[string]any{"taskId": posted.ID, "kind": "completed", "message": "Done on B.", "result": "ok"}, nil)

	var seen []string
	waitFor(t, func() bool {
		var u relay.Updates
		sa.call("read_updates", map[string]any{}, &u)
		for _, e := range u.Updates {
			seen = append(seen, e.Type)
		}
		return len(seen) >= 2
	}, "alice's updates on A")
	if strings.Join(seen, ",") != relay.EventTaskClaimed+","+relay.EventTaskCompleted {
		t.Fatalf("alice's updates = %v", seen)
	}
	// /metrics shows the mesh: the link, the relays, what went out and came in.
	sc := mustScrape(t, a)
	if sc.value("crosschat_mesh_link", "state", "connected") != 1 || sc.value("crosschat_mesh_ready") != 1 ||
		sc.value("crosschat_mesh_relay_online", "relay", "relay-b", "self", "false") != 1 ||
		sc.value("crosschat_mesh_published_total") < 1 || sc.value("crosschat_mesh_applied_total") < 2 ||
		sc.value("crosschat_mesh_outbox_depth") < 0 || sc.value("crosschat_mesh_consumer_lag") < 0 {
		t.Fatalf("A's mesh metrics: link %v ready %v relay-b %v published %v applied %v outbox %v lag %v",
			sc.value("crosschat_mesh_link", "state", "connected"), sc.value("crosschat_mesh_ready"),
			sc.value("crosschat_mesh_relay_online", "relay", "relay-b", "self", "false"),
			sc.value("crosschat_mesh_published_total"), sc.value("crosschat_mesh_applied_total"),
			sc.value("crosschat_mesh_outbox_depth"), sc.value("crosschat_mesh_consumer_lag"))
	}
	var got relay.Task
	sa.call("get_task", map[string]any{"taskId": posted.ID}, &got)
	if got.Status != relay.StatusCompleted || got.Signature != relay.MarkVerified {
		t.Fatalf("get_task on A = status %s, signature %q", got.Status, got.Signature)
	}

	loc := []string{"--port", strconv.Itoa(a.Config().Port), "--data-dir", a.Config().DataDir}
	out, errs, code := run(t, append([]string{"mesh", "status", "--json"}, loc...)...)
	var ms app.MeshStatus
	if code != 0 || json.Unmarshal([]byte(out), &ms) != nil || !ms.Enabled || ms.RelayName != "relay-a" || len(ms.Relays) != 2 || ms.Link != "connected" {
		t.Fatalf("mesh status: %d %s %s", code, out, errs)
	}
	out, _, code = run(t, append([]string{"mesh", "agents"}, loc...)...)
	if code != 0 || !strings.Contains(out, "bob") || !strings.Contains(out, "relay-b") || !strings.Contains(out, "alice") {
		t.Fatalf("mesh agents: %d %s", code, out)
	}
	out, _, code = run(t, append([]string{"mesh", "invite"}, loc...)...)
	if code != 0 || !strings.Contains(out, "crosschat-relay serve --nats nats://crosschat:") {
		t.Fatalf("mesh invite: %d %s", code, out)
	}
	if sc.value("crosschat_mesh_refused_total", "reason", "signature") != 0 {
		t.Fatal("A refused a signature")
	}
}

func TestNoMeshWithoutFlags(t *testing.T) {
	r := startRelay(t)
	st, err := r.Services.Mesh.Status()
	if err != nil || st.Enabled {
		t.Fatalf("mesh status without --nats = %+v, %v", st, err)
	}
	if relays, err := r.Services.Mesh.Relays(); err != nil || relays == nil || len(relays) != 0 {
		t.Fatalf("mesh relays without --nats = %#v, %v", relays, err)
	}
	out, _, code := run(t, "mesh", "status", "--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir)
	if code != 0 || !strings.Contains(out, "not in a mesh") {
		t.Fatalf("mesh status: %d %s", code, out)
	}
}

// Ensure the mesh settings saved in the window are checked, wait for the
// next start, and then join the mesh; flags would win over them.
func TestMeshSettingsApplyAtNextStart(t *testing.T) {
	cfg := apptest.Config(filepath.Join(t.TempDir(), "data"))
	cfg.Mesh = config.Mesh{Replicas: 1}
	start := func() *app.Relay {
		r, err := app.Start(cfg, app.StartOptions{Version: "test"})
		noErr(t, err)
		return r
	}
	stop := func(r *app.Relay) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		noErr(t, r.Shutdown(ctx))
	}
	r := start()
	v, err := r.Services.Mesh.MeshSettings()
	noErr(t, err)
	if v.Source != app.MeshFromNone || !v.Applied || v.Saved.Enabled() {
		t.Fatalf("fresh relay: %+v", v)
	}
	for _, bad := range []relay.MeshSettings{
		{URLs: []string{"http://nats.example:4222"}},
		{URLs: []string{"nats://user:secret@nats.example:4222"}},
		{URLs: []string{"nats://a:4222"}, Creds: "relative/team.creds"},
		{Embed: "127.0.0.1"},
		{Embed: "127.0.0.1:99999"},
	} {
		if _, err := r.Services.Mesh.SaveMeshSettings(bad); relay.ErrorCode(err) != relay.EInvalidRequest {
			t.Errorf("save %+v = %v; want invalid_request", bad, err)
		}
	}
	embed := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	v, err = r.Services.Mesh.SaveMeshSettings(relay.MeshSettings{Embed: " " + embed + " ", Name: "from-settings", URLs: []string{" "}})
	noErr(t, err)
	if v.Saved.Embed != embed || len(v.Saved.URLs) != 0 || v.Applied || v.Source != app.MeshFromNone {
		t.Fatalf("saved: %+v", v)
	}
	if st, _ := r.Services.Mesh.Status(); st.Enabled {
		t.Fatal("the saved settings applied before a restart")
	}
	stop(r)

	r = start()
	waitFor(t, func() bool {
		st, err := r.Services.Mesh.Status()
		return err == nil && st.Ready && st.RelayName == "from-settings"
	}, "the relay joined the mesh of the saved settings")
	v, err = r.Services.Mesh.MeshSettings()
	noErr(t, err)
	if v.Source != app.MeshFromSettings || !v.Applied || v.Error != "" {
		t.Fatalf("after the restart: %+v", v)
	}
	stop(r)

	// Saved settings that cannot work leave the relay out of the mesh, and say why.
	r = start()
	_, err = r.Services.Mesh.SaveMeshSettings(relay.MeshSettings{Embed: embed, NKey: "/no/such/nkey.seed"})
	noErr(t, err)
	stop(r)
	r = start()
	defer stop(r)
	v, err = r.Services.Mesh.MeshSettings()
	noErr(t, err)
	if st, _ := r.Services.Mesh.Status(); st.Enabled || v.Source != app.MeshFromNone || !strings.Contains(v.Error, "nkey") {
		t.Fatalf("with a missing nkey file: enabled %v, %+v", st.Enabled, v)
	}
}
