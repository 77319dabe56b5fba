package app_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// stepClock is a clock a test moves on by hand; each reading is a
// millisecond on from the last, so timestamps stay ordered.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// presenceSurfaces is what each place a person or an agent reads presence
// says of slug: the dashboard's bridge (Agents.List), `agents list`, and
// the MCP tool list_agents (online agents only, and all of them).
type presenceSurfaces struct {
	bridge, cli, tool, toolAll string
}

func readPresence(t *testing.T, r *app.Relay, asker *mcpSession, slug string) presenceSurfaces {
	t.Helper()
	var p presenceSurfaces
	agents, err := r.Services.Agents.List()
	noErr(t, err)
	for _, a := range agents {
		if a.Slug == slug {
			p.bridge = a.Availability
			if a.Availability == relay.Online && !a.Connected {
				p.bridge += " (not connected)"
			}
		}
	}
	out, errs, code := run(t, "agents", "list", "--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir)
	if code != 0 {
		t.Fatalf("agents list: %d %s", code, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == slug {
			p.cli = f[len(f)-3] // SLUG NAME… KIND MODEL STATE TOKEN LAST-SEEN
		}
	}
	var listed struct{ Agents []relay.Agent }
	p.tool = "absent"
	asker.call("list_agents", map[string]any{}, &listed)
	for _, a := range listed.Agents {
		if a.Slug == slug {
			p.tool = a.Availability
		}
	}
	asker.call("list_agents", map[string]any{"includeOffline": true}, &listed)
	for _, a := range listed.Agents {
		if a.Slug == slug {
			p.toolAll = a.Availability
		}
	}
	return p
}

// An agent whose push stream (what `monitor` and `channel` hold open)
// stays connected past the old timers (the 2-minute window of its last
// call, and 5 minutes) is online on the dashboard, in `agents list` and in
// list_agents for as long as the stream is open; when the stream closes it
// is offline on all three at once. The relay's clock is a test clock.
func TestStreamKeepsAgentOnline(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	clk := &stepClock{t: time.Now().UTC()}
	r := apptest.Start(t, apptest.Config(filepath.Join(t.TempDir(), "data")), app.StartOptions{Version: "test", Now: clk.Now})
	watcher, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "watcher", DisplayName: "Watcher", ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
	askerTok, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "asker", DisplayName: "Asker", ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
	asker := newSession(t, r, askerTok.Token)

	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan struct{}, 1)
	ended := make(chan error, 1)
	stream := &client.PushStream{BaseURL: r.Config().BaseURL(), Token: watcher.Token, After: -1,
		OnEvent: func(relay.PushEvent) error { return nil },
		OnReady: func(int64) {
			select {
			case ready <- struct{}{}:
			default:
			}
		}}
	go func() { ended <- stream.Run(ctx) }()
	t.Cleanup(stop)
	select {
	case <-ready:
	case err := <-ended:
		t.Fatalf("the push stream ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the push stream never opened")
	}

	online := presenceSurfaces{bridge: relay.Online, cli: relay.Online, tool: relay.Online, toolAll: relay.Online}
	if got := readPresence(t, r, asker, "watcher"); got != online {
		t.Fatalf("stream just opened: %+v, want online everywhere", got)
	}
	for _, d := range []time.Duration{relay.OnlineWindow + time.Second, 5 * time.Minute, time.Hour} {
		clk.Advance(d)
		if got := readPresence(t, r, asker, "watcher"); got != online {
			t.Fatalf("stream open, %s later: %+v, want online everywhere", d, got)
		}
	}

	// The close is recorded: the watcher was last seen then (an hour on
	// from its open), and is offline from then on, on all three.
	stop()
	<-ended
	waitFor(t, func() bool {
		a, err := r.Service().GetAgent(context.Background(), "watcher")
		noErr(t, err)
		seen, _ := relay.ParseTime(a.LastSeenAt)
		return !a.Connected && clk.Now().Sub(seen) < time.Second
	}, "the stream's close recorded as the watcher's last sighting")
	offline := presenceSurfaces{bridge: relay.Offline, cli: relay.Offline, tool: "absent", toolAll: relay.Offline}
	if got := readPresence(t, r, asker, "watcher"); got != offline {
		a, _ := r.Service().GetAgent(context.Background(), "watcher")
		b, _ := json.Marshal(a)
		t.Fatalf("the stream closed: %+v, want offline everywhere (%s)", got, b)
	}
}

// In a mesh a stream on the agent's own relay holds it online on the other
// relay too, through the directory, past the old timers on both relays'
// clocks; when the stream closes the other relay shows it offline.
func TestStreamPresenceAcrossMesh(t *testing.T) {
	clk := &stepClock{t: time.Now().UTC()}
	opts := app.StartOptions{Version: "test", Now: clk.Now}
	a := startMeshRelayWith(t, opts, "relay-a")
	inv, err := a.Services.Mesh.Invite()
	noErr(t, err)
	b := startMeshRelayWith(t, opts, "relay-b", inv.URL)
	for _, p := range []struct {
		r     *app.Relay
		other string
	}{{a, "relay-b"}, {b, "relay-a"}} {
		waitFor(t, func() bool { _, err := p.r.Services.Mesh.Trust(p.other, ""); return err == nil }, p.other+" trusted")
	}
	watcher, err := a.Services.Agents.Create(relay.CreateAgentInput{Slug: "watcher", DisplayName: "Watcher", ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
	askerTok, err := b.Services.Agents.Create(relay.CreateAgentInput{Slug: "asker", DisplayName: "Asker", ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
	asker := newSession(t, b, askerTok.Token)
	onB := func() (string, bool) {
		agents, err := b.Services.Agents.List()
		noErr(t, err)
		for _, ag := range agents {
			if ag.Slug == "watcher" {
				return ag.Availability, ag.Connected
			}
		}
		return "absent", false
	}
	listedOnB := func() string {
		var listed struct{ Agents []relay.Agent }
		asker.call("list_agents", map[string]any{}, &listed)
		for _, ag := range listed.Agents {
			if ag.Slug == "watcher" {
				return ag.Availability
			}
		}
		return "absent"
	}

	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan struct{}, 1)
	ended := make(chan error, 1)
	stream := &client.PushStream{BaseURL: a.Config().BaseURL(), Token: watcher.Token, After: -1, OnEvent: func(relay.PushEvent) error { return nil },
		OnReady: func(int64) {
			select {
			case ready <- struct{}{}:
			default:
			}
		}}
	go func() { ended <- stream.Run(ctx) }()
	t.Cleanup(stop)
	select {
	case <-ready:
	case err := <-ended:
		t.Fatalf("the push stream ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the push stream never opened")
	}
	waitFor(t, func() bool { on, held := onB(); return on == relay.Online && held }, "relay-b showing the watcher online, held by the directory")
	clk.Advance(10 * time.Minute)
	if on, held := onB(); on != relay.Online || !held || listedOnB() != relay.Online {
		t.Fatalf("10 minutes on, with the stream open on relay-a: relay-b shows the watcher %s (held %v), list_agents %s", on, held, listedOnB())
	}
	stop()
	<-ended
	waitFor(t, func() bool { on, _ := onB(); return on == relay.Offline && listedOnB() == "absent" }, "relay-b showing the watcher offline once its stream closed")
}
