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

// stepClock is a clock a test moves on by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
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

	stop()
	<-ended
	offline := presenceSurfaces{bridge: relay.Offline, cli: relay.Offline, tool: "absent", toolAll: relay.Offline}
	var got presenceSurfaces
	waitFor(t, func() bool { got = readPresence(t, r, asker, "watcher"); return got == offline }, "the watcher offline everywhere once its stream closed")
	a, err := r.Service().GetAgent(context.Background(), "watcher")
	noErr(t, err)
	if seen, _ := relay.ParseTime(a.LastSeenAt); clk.Now().Sub(seen) > time.Second {
		b, _ := json.Marshal(a)
		t.Fatalf("last seen is not the close: %s (now %s)", b, relay.FormatTime(clk.Now()))
	}
}
