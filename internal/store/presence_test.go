package store_test

import (
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// presenceOf is slug's availability as each read sees it: GetAgent,
// ListAgents (online only, and all), Stats (how many are online).
func (e *env) presenceOf(slug string) (get, listed, all string, online int) {
	e.t.Helper()
	a, err := e.db.GetAgent(e.ctx, slug)
	if err != nil {
		e.t.Fatal(err)
	}
	get, listed = a.Availability, relay.Offline
	on, err := e.db.ListAgents(e.ctx, false)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, x := range on {
		if x.Slug == slug {
			listed = x.Availability
		}
	}
	every, err := e.db.ListAgents(e.ctx, true)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, x := range every {
		if x.Slug == slug {
			all = x.Availability
		}
	}
	st, err := e.db.Stats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return get, listed, all, st.Agents.Online
}

// wantPresence fails unless every read says want for slug, and Stats
// counts online agents.
func (e *env) wantPresence(when, slug, want string, online int) {
	e.t.Helper()
	get, listed, all, n := e.presenceOf(slug)
	if get != want || listed != want || all != want || n != online {
		e.t.Fatalf("%s: %s is %s (get), %s (online list), %s (all), %d online; want %s and %d online",
			when, slug, get, listed, all, n, want, online)
	}
}

// An open push stream holds its agent online however long it stays open,
// past the window of its last call; the agent is offline as soon as its
// last stream closes, seen at that moment, and back online by its next call.
func TestStreamHoldsPresence(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("alice")
	e.clock.Advance(relay.OnlineWindow + time.Second)
	e.wantPresence("after the window", "alice", relay.Offline, 0)
	changes, stop := e.db.Subscribe(64)
	defer stop()
	agentChange := func(when string) relay.Agent { // the last one published
		t.Helper()
		var last *relay.Agent
		for _, c := range drain(changes, 50*time.Millisecond) {
			if c.Type == relay.ChangeAgent && c.Agent.Slug == "alice" {
				last = c.Agent
			}
		}
		if last == nil {
			t.Fatalf("%s: no change of alice published", when)
		}
		return *last
	}

	done1, err := e.db.StreamOpened(e.ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if a := agentChange("stream opened"); a.Availability != relay.Online || !a.Connected {
		t.Fatalf("published on open: %+v", a)
	}
	done2, err := e.db.StreamOpened(e.ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5*time.Minute + time.Second) // past the window, and the old 5 minutes
	e.wantPresence("two streams open, 5 minutes on", "alice", relay.Online, 1)
	a, _ := e.db.GetAgent(e.ctx, "alice")
	if seen, _ := relay.ParseTime(a.LastSeenAt); !a.Connected || e.clock.Now().Sub(seen) > time.Second {
		t.Fatalf("a connected agent is seen now: %+v", a)
	}

	done1()
	done1() // once only: the second stream still counts
	e.clock.Advance(time.Hour)
	e.wantPresence("one stream left, an hour on", "alice", relay.Online, 1)

	done2()
	if a := agentChange("last stream closed"); a.Availability != relay.Offline || a.Connected {
		t.Fatalf("published on the last close: %+v", a)
	}
	closedAt := e.clock.Now()
	e.wantPresence("the last stream closed", "alice", relay.Offline, 0)
	a, _ = e.db.GetAgent(e.ctx, "alice")
	if seen, _ := relay.ParseTime(a.LastSeenAt); closedAt.Sub(seen) > time.Second || seen.After(closedAt) {
		t.Fatalf("last seen %s, want the close (%s)", a.LastSeenAt, relay.FormatTime(closedAt))
	}

	// Heard from again: online by the window of that call, and published
	// though the close was published a moment ago.
	if _, err := e.db.Heartbeat(e.ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if a := agentChange("heard from again"); a.Availability != relay.Online || a.Connected {
		t.Fatalf("published on the next call: %+v", a)
	}
	e.wantPresence("heard from again", "alice", relay.Online, 1)
	e.clock.Advance(relay.OnlineWindow + time.Second)
	e.wantPresence("the window after that call", "alice", relay.Offline, 0)

	if _, err := e.db.StreamOpened(e.ctx, "ghost"); relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Fatalf("a stream of an unknown agent: %v", err)
	}
}

// A removed agent's streams are forgotten with it: an agent registered
// under its slug later starts offline.
func TestStreamPresenceForgottenWithAgent(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("temp")
	done, err := e.db.StreamOpened(e.ctx, "temp")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteAgent(e.ctx, "temp"); err != nil {
		t.Fatal(err)
	}
	done() // its stream ends after the agent went: nothing to record
	if _, _, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "temp", DisplayName: "Temp", ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(relay.OnlineWindow + time.Second)
	e.wantPresence("a new agent under a removed one's slug", "temp", relay.Offline, 0)
}

// A remote agent is online while the mesh directory says so, however old
// its placeholder's last-seen time; offline as soon as it says otherwise,
// and back to its last-seen time once it is no longer listed.
func TestDirectoryHoldsRemotePresence(t *testing.T) {
	e := newEnv(t, store.Options{})
	remote := func(online bool) relay.RemoteAgent {
		return relay.RemoteAgent{Slug: "far", DisplayName: "Far", ModelSlug: "m", RelayID: "r2", RelayName: "two", Online: online}
	}
	sync := func(agents ...relay.RemoteAgent) {
		t.Helper()
		if _, err := e.db.Mesh().SyncRemoteAgents(e.ctx, agents); err != nil {
			t.Fatal(err)
		}
	}
	changes, stop := e.db.Subscribe(64)
	defer stop()
	published := func() []string {
		var out []string
		for _, c := range drain(changes, 50*time.Millisecond) {
			if c.Type == relay.ChangeAgent && c.Agent.Slug == "far" {
				out = append(out, c.Agent.Availability)
			}
		}
		return out
	}

	sync(remote(true))
	if p := published(); len(p) != 1 || p[0] != relay.Online {
		t.Fatalf("published on the first sync: %v", p)
	}
	for range 5 {
		e.clock.Advance(relay.OnlineWindow)
		sync(remote(true))
	}
	e.wantPresence("listed online for 10 minutes", "far", relay.Online, 1)
	if p := published(); len(p) != 0 {
		t.Fatalf("the same word published again: %v", p)
	}

	sync(remote(false))
	if p := published(); len(p) != 1 || p[0] != relay.Offline {
		t.Fatalf("published when the directory said offline: %v", p)
	}
	e.wantPresence("listed offline", "far", relay.Offline, 0)

	sync(remote(true))
	sync() // no longer listed: its last-seen time decides
	if p := published(); len(p) != 2 || p[1] != relay.Online {
		t.Fatalf("published: %v; want online twice (the word, then the window)", p)
	}
	e.clock.Advance(relay.OnlineWindow + time.Second)
	e.wantPresence("unlisted, the window on", "far", relay.Offline, 0)
}

// An agent the operator creates (agents add, the dashboard) has not been
// heard from: it is offline until its first call, which brings it online
// at once; one that registers itself is online from that call.
func TestCreatedAgentOfflineUntilHeardFrom(t *testing.T) {
	e := newEnv(t, store.Options{})
	_, _, _, before := e.presenceOf(relay.DefaultOperatorSlug) // created at Open
	e.register("alice")                                        // by its own call
	e.wantPresence("registered itself", "alice", relay.Online, before+1)
	if _, _, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "builder", Kind: relay.KindAgent, DisplayName: "Builder", ModelSlug: "m", Capabilities: []string{"code"}}); err != nil {
		t.Fatal(err)
	}
	e.wantPresence("created by the operator", "builder", relay.Offline, before+1)
	changes, stop := e.db.Subscribe(64)
	defer stop()
	e.clock.Advance(time.Millisecond)
	if _, err := e.db.Heartbeat(e.ctx, "builder"); err != nil {
		t.Fatal(err)
	}
	// Published at once, however soon after the creation: the dashboard and
	// the mesh directory show it online.
	var last *relay.Agent
	for _, c := range drain(changes, 50*time.Millisecond) {
		if c.Type == relay.ChangeAgent && c.Agent.Slug == "builder" {
			last = c.Agent
		}
	}
	if last == nil || last.Availability != relay.Online {
		t.Fatalf("the first call's change: %+v; want builder published online", last)
	}
	e.wantPresence("its first call", "builder", relay.Online, before+2)
}
