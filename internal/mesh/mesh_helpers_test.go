package mesh

import (
	"context"
	"fmt"
	neturl "net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// testRelay is one relay of a test mesh: a real SQLite store and a mesh node.
type testRelay struct {
	name string
	dir  string
	db   *store.DB
	node *Node
	svc  relay.Service
}

// startRelay opens a store in a fresh folder (or dir) and joins the mesh at
// urls, or embeds a server when urls is empty.
func startRelay(t testing.TB, name, dir string, urls ...string) *testRelay {
	t.Helper()
	return startRelayWith(t, name, dir, store.Options{}, nil, urls...)
}

// startRelayWith is startRelay with store options and a change to the mesh options.
func startRelayWith(t testing.TB, name, dir string, so store.Options, mod func(*Options), urls ...string) *testRelay {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	db, err := store.Open(filepath.Join(dir, "relay.db"), so)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	urls = ownInvites(urls)
	opts := Options{URLs: urls, DataDir: dir, Name: name, Store: db.Mesh(), Changes: db.Subscribe, Refresh: 5 * time.Second}
	if len(urls) == 0 {
		opts.Embed = "127.0.0.1:-1"
	}
	if mod != nil {
		mod(&opts)
	}
	node, err := Start(opts)
	if err != nil {
		db.Close()
		t.Fatalf("start mesh %s: %v", name, err)
	}
	if node.srv != nil {
		embeddedNodes.Store(node.srv.Addr().String(), node)
	}
	r := &testRelay{name: name, dir: dir, db: db, node: node, svc: relay.WithMesh(db, node)}
	t.Cleanup(r.stop)
	select {
	case <-node.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("mesh %s not ready", name)
	}
	return r
}

func (r *testRelay) stop() {
	if r.node != nil && r.node.srv != nil {
		embeddedNodes.CompareAndDelete(r.node.srv.Addr().String(), r.node)
	}
	if r.node != nil {
		r.node.Close()
		r.node = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

// eventually polls cond until it holds or 30 s pass; a failure shows what
// cond said last.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	poll.Until(t, what, 30*time.Second, func() bool {
		ok, msg := cond()
		last = msg
		return ok
	}, func() string { return "last: " + last })
}

func createAgent(t *testing.T, r *testRelay, slug string) {
	t.Helper()
	if _, _, err := r.svc.CreateAgent(t.Context(), relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-output"}}); err != nil {
		t.Fatalf("create %s on %s: %v", slug, r.name, err)
	}
	if _, err := r.svc.Heartbeat(t.Context(), slug); err != nil {
		t.Fatalf("heartbeat %s: %v", slug, err)
	}
}

// aliceAndBob starts relay A with agent alice and relay B, joined to A's
// NATS server, with agent bob.
// The directory is read again every 200 ms in tests (a second otherwise),
// so a test waiting for an entry waits less.
func init() { dirPoll = 200 * time.Millisecond }

func aliceAndBob(t *testing.T) (a, b *testRelay) {
	t.Helper()
	a = startRelay(t, "relay-a", "")
	b = startRelay(t, "relay-b", "", a.node.InviteURL())
	aliceMeetsBob(t, a, b)
	return a, b
}

// aliceMeetsBob makes a and b trust each other and creates agent alice on
// a and agent bob on b.
func aliceMeetsBob(t *testing.T, a, b *testRelay) {
	t.Helper()
	trustEachOther(t, a, b)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
}

// trustedBee starts relay A and relay B, joined to A's NATS server and
// trusting each other, with agent bee on B that A lists.
func trustedBee(t *testing.T) (a, b *testRelay) {
	t.Helper()
	a = startRelay(t, "relay-a", "")
	b = startRelay(t, "relay-b", "", a.node.InviteURL())
	trustEachOther(t, a, b)
	createAgent(t, b, "bee")
	knows(t, a, "bee", "relay-b")
	return a, b
}

// post posts a task titled title from sender to recipient on r.
func post(t *testing.T, r *testRelay, sender, recipient, title string) relay.Task {
	t.Helper()
	task, err := r.svc.PostTask(t.Context(), relay.PostTaskInput{SenderSlug: sender, RecipientSlug: recipient, Title: title, Instructions: "x"})
	if err != nil {
		t.Fatalf("post %q from %s to %s on %s: %v", title, sender, recipient, r.name, err)
	}
	return task
}

// arrives waits until r holds the task id.
func arrives(t *testing.T, r *testRelay, id string) { reaches(t, r, id, "") }

// reaches waits until r holds the task id in status (in any, for "").
func reaches(t *testing.T, r *testRelay, id string, status relay.TaskStatus) {
	t.Helper()
	eventually(t, "task "+id+" on "+r.name+" "+string(status), func() (bool, string) {
		task, err := r.svc.Task(t.Context(), id)
		return err == nil && (status == "" || task.Status == status), fmt.Sprint(task.Status, err)
	})
}

// outboxesEmpty waits until every relay of rs has published all it holds.
func outboxesEmpty(t *testing.T, rs ...*testRelay) {
	t.Helper()
	eventually(t, "outboxes empty", func() (bool, string) {
		depths, empty := "", true
		for _, r := range rs {
			d, err := r.db.Mesh().OutboxDepth(t.Context())
			empty = empty && err == nil && d == 0
			depths += fmt.Sprintf("%s %d %v; ", r.name, d, err)
		}
		return empty, depths
	})
}

// claims waits until slug claims a task on r and returns it.
func claims(t *testing.T, r *testRelay, slug string) *relay.Task {
	t.Helper()
	var task *relay.Task
	eventually(t, slug+" claims on "+r.name, func() (bool, string) {
		var err error
		task, err = r.svc.ClaimNext(t.Context(), relay.ClaimInput{RecipientSlug: slug, Via: relay.ViaChat})
		return err == nil && task != nil, fmt.Sprint(err)
	})
	return task
}

// trustEachOther makes every relay of rs trust every other, as their
// operators would with `mesh trust`, once each has seen the others.
func trustEachOther(t testing.TB, rs ...*testRelay) {
	t.Helper()
	for _, x := range rs {
		for _, y := range rs {
			if x == y {
				continue
			}
			var last error
			ok := false
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				if _, last = x.node.SetTrust(context.Background(), y.node.id.ID, relay.RelayTrusted, ""); last == nil {
					ok = true
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !ok {
				t.Fatalf("%s trusts %s: %v", x.name, y.name, last)
			}
		}
	}
}

// knows waits until r lists slug as an agent of relay owner.
func knows(t *testing.T, r *testRelay, slug, owner string) {
	t.Helper()
	eventually(t, r.name+" lists "+slug, func() (bool, string) {
		as, err := r.svc.ListAgents(t.Context(), true)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range as {
			if a.Slug == slug {
				return a.Relay == owner, fmt.Sprintf("%s on relay %q", slug, a.Relay)
			}
		}
		return false, fmt.Sprintf("%d agents, no %s", len(as), slug)
	})
}

// identity loads (or makes) the relay identity in dir, failing the test on an error.
func identity(tb testing.TB, dir, name string) Identity {
	tb.Helper()
	id, err := LoadIdentity(dir, name)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// sealed signs change from id for the relay to, failing the test on an error.
func sealed(tb testing.TB, id Identity, msgID, to string, change relay.MeshChange) []byte {
	tb.Helper()
	data, err := seal(id, msgID, to, change)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// readAll reads every unread update of slug.
func readAll(t *testing.T, r *testRelay, slug string) []relay.Event {
	t.Helper()
	u, err := r.svc.ReadUpdates(t.Context(), slug, 100)
	if err != nil {
		t.Fatalf("read updates of %s: %v", slug, err)
	}
	return u.Updates
}

// collect reads slug's updates on r until n have arrived.
func collect(t *testing.T, r *testRelay, slug string, n int) []relay.Event {
	t.Helper()
	var got []relay.Event
	eventually(t, fmt.Sprintf("%d updates for %s", n, slug), func() (bool, string) {
		got = append(got, readAll(t, r, slug)...)
		return len(got) >= n, fmt.Sprintf("%d updates: %+v", len(got), got)
	})
	time.Sleep(0) // yield; extra updates are checked by the caller's next read
	return got
}

func types(evs []relay.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// startServer runs a JetStream server the test controls, on port (0: any).
func startServer(t *testing.T, dir string, port int) *server.Server {
	t.Helper()
	if port == 0 {
		port = -1
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	return s
}

// embeddedNodes maps the address of each embedded server a test started
// to its relay (see jetStreamClient and ownInvites).
var embeddedNodes sync.Map

// isInvite reports whether s is an invite token.
func isInvite(s string) bool { _, ok := parseInviteToken(s); return ok }

// ownInvites gives each relay a test starts an invite of its own: an
// invite URL of an embedded server the test started is replaced by a new
// one of that server, as its operator would run `mesh invite` once per
// relay (an invite lets one relay in, once: admit_test.go tests that with
// relays started otherwise).
func ownInvites(urls []string) []string {
	out := append([]string(nil), urls...)
	for i, raw := range out {
		u, err := neturl.Parse(raw)
		if err != nil || u.User == nil || u.User.Username() != embedURLUser {
			continue
		}
		if pass, _ := u.User.Password(); !isInvite(pass) {
			continue // the shared password of earlier versions, say
		}
		if v, ok := embeddedNodes.Load(u.Host); ok && v.(*Node).srv.Running() {
			if fresh := v.(*Node).InviteURL(); fresh != "" {
				out[i] = fresh
			}
		}
	}
	return out
}

// jetStreamClient connects a JetStream client with every permission to the
// NATS server at url, closed when the test ends: what a holder of an
// account-wide credential could send (an external cluster whose relays
// share one user, or --nats-embed-open), to test what the relays' own
// checks refuse. On an embedded server a test started, whose users are
// the relays themselves, that is the relay's in-process admin connection,
// whatever user url names: an invite gives no such client any more (see
// neighbour_test.go for what it gives).
func jetStreamClient(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	opts := []nats.Option{}
	if u, err := neturl.Parse(url); err == nil {
		if v, ok := embeddedNodes.Load(u.Host); ok && v.(*Node).admin != nil && v.(*Node).srv.Running() {
			n := v.(*Node)
			url = ""
			opts = append(opts, nats.InProcessServer(n.srv), nats.UserInfo(adminUser, n.adminPass))
		}
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
