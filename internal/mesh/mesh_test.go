package mesh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	opts := Options{URLs: urls, DataDir: dir, Name: name, Store: db, Changes: db.Subscribe, Refresh: 5 * time.Second}
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
			d, err := r.db.OutboxDepth(t.Context())
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

func TestIdentityIsStableAndPrivate(t *testing.T) {
	dir := t.TempDir()
	a := identity(t, dir, "laptop")
	b := identity(t, dir, "")
	if a.ID != b.ID || a.PublicKey != b.PublicKey || b.Name != "laptop" || !validRelayID(a.ID) {
		t.Fatalf("identity changed: %+v then %+v", a, b)
	}
	c, err := LoadIdentity(dir, "build-box")
	if err != nil || c.ID != a.ID || c.Name != "build-box" {
		t.Fatalf("renamed identity = %+v, %v", c, err)
	}
	for _, f := range []string{identityFile, keyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", f, st.Mode().Perm(), err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, keyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(dir, ""); err == nil {
		t.Fatal("a damaged key file was accepted")
	}
}

func TestVerifyMarks(t *testing.T) {
	id := identity(t, t.TempDir(), "a")
	other := identity(t, t.TempDir(), "b")
	data := sealed(t, id, "m1", "0123456789abcdef", relay.MeshChange{Task: relay.Task{ID: relay.NewID(), Title: "x"}})
	e, _, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	tampered := e
	tampered.To = "fedcba9876543210"
	for _, tc := range []struct {
		name           string
		e              envelope
		dirKey, pinned string
		want           string
	}{
		{"good", e, id.PublicKey, id.PublicKey, relay.MarkVerified},
		{"pinned only (directory entry expired)", e, "", id.PublicKey, relay.MarkVerified},
		{"no key known", e, "", "", relay.MarkUnverified},
		{"key changed", e, other.PublicKey, id.PublicKey, relay.MarkMismatch},
		{"signed by another key", e, other.PublicKey, other.PublicKey, relay.MarkMismatch},
		{"altered after signing", tampered, id.PublicKey, id.PublicKey, relay.MarkMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verify(tc.e, tc.dirKey, tc.pinned); got != tc.want {
				t.Fatalf("verify = %s, want %s", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "{}", `{"v":1,"id":"x","from":"nothex"}`, "[1,2]"} {
		if _, _, err := decode([]byte(bad)); err == nil {
			t.Errorf("decode(%q) accepted", bad)
		}
	}
}

func TestDirectoryAndSlugClaim(t *testing.T) {
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	knows(t, b, "alice", "relay-a")
	knows(t, a, "alice", "relay-a")

	// A slug another relay owns is refused, naming that relay.
	_, _, err := a.svc.CreateAgent(t.Context(), relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m"})
	var de *relay.Error
	if !errors.As(err, &de) || de.Code != relay.EAgentExists || de.Details["relay"] != "relay-b" {
		t.Fatalf("CreateAgent bob on A = %v; want agent_exists naming relay-b", err)
	}
	if _, err := a.svc.RegisterAgent(t.Context(), relay.RegisterInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}}); !errors.As(err, &de) || de.Code != relay.EAgentExists {
		t.Fatalf("RegisterAgent bob on A = %v; want agent_exists", err)
	}
	// The compare-and-set create: a slug nobody holds is taken by exactly one relay.
	errs := make(chan error, 2)
	for _, r := range []*testRelay{a, b} {
		go func() { errs <- r.node.ClaimSlug(context.Background(), "carol") }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) {
		t.Fatalf("racing claims of carol: %v and %v; want exactly one to win", e1, e2)
	}
	// Registering again on the owning relay is fine.
	if _, err := b.svc.RegisterAgent(t.Context(), relay.RegisterInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}}); err != nil {
		t.Fatalf("RegisterAgent bob on B: %v", err)
	}
	st, err := a.node.Status(t.Context())
	if err != nil || st.Link != "connected" || len(st.Relays) != 2 || !st.Relays[0].Self {
		t.Fatalf("status = %+v, %v", st, err)
	}
	as := a.node.Agents()
	if len(as) < 2 {
		t.Fatalf("directory agents = %+v", as)
	}
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

func TestCrossRelayLifecycle(t *testing.T) {
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()

	// A claim waiting on B is woken by a task posted on A.
	claimed := make(chan *relay.Task, 1)
	go func() {
		task, err := b.svc.ClaimNext(context.Background(), relay.ClaimInput{RecipientSlug: "bob", Wait: 20 * time.Second, Via: relay.ViaChat})
		if err != nil {
			t.Errorf("claim on B: %v", err)
		}
		claimed <- task
	}()
	posted, err := a.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Build it", Instructions: "Please build."})
	if err != nil {
		t.Fatalf("post on A: %v", err)
	}
	task := <-claimed
	if task == nil || task.ID != posted.ID || task.Title != "Build it" || task.SenderSlug != "alice" {
		t.Fatalf("claimed on B = %+v; want the task posted on A (%s)", task, posted.ID)
	}
	if _, err := b.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportProgress, Message: "half way"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "done", Result: "42"}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, a, "alice", 3)
	if want := []string{relay.EventTaskClaimed, relay.EventTaskProgress, relay.EventTaskCompleted}; fmt.Sprint(types(got)) != fmt.Sprint(want) {
		t.Fatalf("alice's updates = %v; want %v once each, in order", types(got), want)
	}
	eventually(t, "A's mirror completed", func() (bool, string) {
		m, err := a.svc.GetTask(ctx, "alice", posted.ID)
		return err == nil && m.Status == relay.StatusCompleted && len(m.Reports) == 2 && m.Reports[1].Result == "42" && m.Signature == relay.MarkVerified,
			fmt.Sprintf("%+v %v", m, err)
	})
	owned, err := b.svc.GetTask(ctx, "bob", posted.ID)
	if err != nil || owned.Signature != relay.MarkVerified {
		t.Fatalf("B's task = %+v, %v; want signature verified", owned, err)
	}

	// Sender actions are commands to the owner: request changes reopens it on B.
	if _, err := a.svc.RequestChanges(ctx, "alice", posted.ID, "add tests"); err != nil {
		t.Fatalf("request changes on A: %v", err)
	}
	again, err := b.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Wait: 20 * time.Second, Via: relay.ViaChat})
	if err != nil || again == nil || again.ID != posted.ID || again.Reports[len(again.Reports)-1].Kind != relay.ReportChanges {
		t.Fatalf("claim after changes on B = %+v, %v", again, err)
	}
	if _, err := b.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: posted.ID, Kind: relay.ReportBlocked, Message: "need a key"}); err != nil {
		t.Fatal(err)
	}
	got = collect(t, a, "alice", 2)
	if want := []string{relay.EventTaskClaimed, relay.EventTaskBlocked}; fmt.Sprint(types(got)) != fmt.Sprint(want) {
		t.Fatalf("alice's updates after changes = %v; want %v", types(got), want)
	}
	// Cancel on A cancels the task on B and tells bob there.
	if _, err := a.svc.CancelTask(ctx, "alice", posted.ID, "not needed"); err != nil {
		t.Fatalf("cancel on A: %v", err)
	}
	reaches(t, b, posted.ID, relay.StatusCancelled)
	bobs := collect(t, b, "bob", 2) // requeued (changes), cancelled
	if want := []string{relay.EventTaskRequeued, relay.EventTaskCancelled}; fmt.Sprint(types(bobs)) != fmt.Sprint(want) {
		t.Fatalf("bob's updates = %v; want %v", types(bobs), want)
	}
	// Nothing more arrives: every update was delivered once.
	outboxesEmpty(t, a, b)
	if extra := readAll(t, a, "alice"); len(extra) != 0 {
		t.Fatalf("alice got extra updates: %+v", extra)
	}
	// A sender action the owner's state no longer allows changes nothing
	// there, and the owner's state comes back to the mirror.
	m, err := a.svc.Task(ctx, posted.ID)
	if err != nil || m.Status != relay.StatusCancelled {
		t.Fatalf("A's mirror = %+v, %v", m, err)
	}
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

func TestOutboxHoldsWhileNATSIsDown(t *testing.T) {
	sdir := t.TempDir()
	srv := startServer(t, sdir, 0)
	url := srv.ClientURL()
	port := srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() { srv.Shutdown() })
	a := startRelay(t, "relay-a", "", url)
	b := startRelay(t, "relay-b", "", url)
	aliceMeetsBob(t, a, b)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()

	srv.Shutdown()
	srv.WaitForShutdown()
	const n = 20
	var ids []string
	for i := range n {
		task, err := a.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "T" + strconv.Itoa(i), Instructions: "x"})
		if err != nil {
			t.Fatalf("post while NATS is down: %v", err)
		}
		ids = append(ids, task.ID)
	}
	if d, err := a.db.OutboxDepth(ctx); err != nil || d != n {
		t.Fatalf("outbox depth while down = %d, %v; want %d", d, err, n)
	}
	srv = startServer(t, sdir, port)
	eventually(t, "all tasks on B", func() (bool, string) {
		ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 500})
		return err == nil && len(ts) == n, fmt.Sprintf("%d tasks, %v", len(ts), err)
	})
	// In order: B's queue gives them back oldest first.
	for i := range n {
		task, err := b.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaChat})
		if err != nil || task == nil || task.ID != ids[i] {
			t.Fatalf("claim %d on B = %+v, %v; want %s", i, task, err, ids[i])
		}
	}
	eventually(t, "A's outbox empty", func() (bool, string) {
		d, err := a.db.OutboxDepth(ctx)
		return err == nil && d == 0, fmt.Sprint(d, err)
	})
}

func TestRedeliveryChangesNothing(t *testing.T) {
	a, b := aliceAndBob(t)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	task := post(t, a, "alice", "bob", "Once")
	arrives(t, b, task.ID)
	// The same envelope again under a new JetStream id (past de-duplication)
	// and under its own id: applied zero more times.
	js := jetStreamClient(t, a.node.InviteURL())
	m, err := a.db.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := b.db.ApplyRemote(ctx, relay.RemoteApply{MsgID: "direct-1", FromRelay: a.node.id.ID, Mark: relay.MarkVerified, Change: relay.MeshChange{Task: m}})
	if err != nil || !applied {
		t.Fatalf("first direct apply = %v, %v", applied, err)
	}
	applied, err = b.db.ApplyRemote(ctx, relay.RemoteApply{MsgID: "direct-1", FromRelay: a.node.id.ID, Mark: relay.MarkVerified, Change: relay.MeshChange{Task: m}})
	if err != nil || applied {
		t.Fatalf("second direct apply = %v, %v; want not applied", applied, err)
	}
	data := sealed(t, a.node.id, "dup-1", b.node.id.ID, relay.MeshChange{Task: m})
	before := b.node.duplicates.Load()
	for _, id := range []string{"js-1", "js-2"} {
		if _, err := js.Publish(ctx, subject(b.node.id.ID), data, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "second copy recognised", func() (bool, string) {
		return b.node.duplicates.Load() == before+1, fmt.Sprint(b.node.duplicates.Load() - before)
	})
	ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob"})
	if err != nil || len(ts) != 1 || ts[0].Status != relay.StatusQueued {
		t.Fatalf("B's tasks = %+v, %v; want the one queued task", ts, err)
	}
}

// Ensure an envelope signed with another key than the one pinned for a
// trusted relay is refused (counted, nothing stored), and a genuine one
// from that relay still arrives, verified.
func TestForgedEnvelopeIsRefused(t *testing.T) {
	a, b := aliceAndBob(t)
	knows(t, b, "alice", "relay-a")
	ctx := t.Context()
	// A third party signs a task "from" relay A with its own key.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forger := Identity{ID: a.node.id.ID, Name: "relay-a", priv: priv, PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))}
	now := relay.FormatTime(time.Now())
	forged := relay.Task{ID: relay.NewID(), SenderSlug: "alice", RecipientSlug: "bob", Title: "Forged", Instructions: "rm -rf",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now, RequiredCapabilities: []string{}}
	data := sealed(t, forger, "forged-1", b.node.id.ID, relay.MeshChange{Task: forged})
	js := jetStreamClient(t, a.node.InviteURL())
	if _, err := js.Publish(ctx, subject(b.node.id.ID), data, jetstream.WithMsgID("forged-1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "forged envelope refused on B", func() (bool, string) {
		r := b.node.Refused()
		return r[RefusedSignature] == 1, fmt.Sprint(r)
	})
	if _, err := b.svc.GetTask(ctx, "bob", forged.ID); err == nil {
		t.Fatal("the forged task was stored on B")
	}
	// A genuine task from A is still verified.
	real := post(t, a, "alice", "bob", "Real")
	eventually(t, "real task verified on B", func() (bool, string) {
		got, err := b.svc.GetTask(ctx, "bob", real.ID)
		return err == nil && got.Signature == relay.MarkVerified, fmt.Sprintf("%+v %v", got.Signature, err)
	})
}

func TestApplyRefusesOutOfBoundsAndPrunes(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "relay.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	if _, _, err := db.CreateAgent(ctx, relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}}); err != nil {
		t.Fatal(err)
	}
	now := relay.FormatTime(time.Now())
	for _, tc := range []struct {
		name  string
		title string
		store bool
	}{
		{"in bounds", "Fine", true},
		{"title over the limit", strings.Repeat("x", relay.MaxShortText+1), false},
		{"empty title", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := relay.Task{ID: relay.NewID(), SenderSlug: "alice", RecipientSlug: "bob", Title: tc.title, Instructions: "x",
				Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now}
			applied, err := db.ApplyRemote(ctx, relay.RemoteApply{MsgID: "m-" + task.ID, FromRelay: "0123456789abcdef", Mark: relay.MarkUnverified, Change: relay.MeshChange{Task: task}})
			if err != nil || !applied {
				t.Fatalf("apply = %v, %v; want applied (recorded)", applied, err)
			}
			_, err = db.Task(ctx, task.ID)
			if stored := err == nil; stored != tc.store {
				t.Fatalf("stored = %v (%v); want %v", stored, err, tc.store)
			}
		})
	}
	n, err := db.PruneApplied(ctx, -time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("prune = %d, %v; want 3", n, err)
	}
}

// Ensure each relay's consumer lag shows what waits for it in the stream
// while it is away, and falls to zero once it is back.
func TestRelayLagWhileARelayIsAway(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	aliceMeetsBob(t, a, b)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	lagOf := func(name string) (uint64, string) {
		st, err := a.node.Status(ctx)
		if err != nil {
			return 0, err.Error()
		}
		for _, r := range st.Relays {
			if r.Name == name {
				return r.Lag, fmt.Sprintf("%s lag %d, outbox %d", name, r.Lag, st.Outbox)
			}
		}
		return 0, fmt.Sprintf("no %s in %+v", name, st.Relays)
	}
	if lag, msg := lagOf("relay-b"); lag != 0 {
		t.Fatalf("before: %s", msg)
	}

	b.stop() // its durable consumer stays in the stream
	for i := range 2 {
		if _, err := a.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "T" + strconv.Itoa(i), Instructions: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "relay-b's lag on A is 2", func() (bool, string) {
		lag, msg := lagOf("relay-b")
		return lag == 2, msg
	})
	if lag, msg := lagOf("relay-a"); lag != 0 {
		t.Fatalf("A's own lag: %s", msg)
	}

	b = startRelay(t, "relay-b", b.dir, url)
	eventually(t, "relay-b's lag on A back to 0", func() (bool, string) {
		lag, msg := lagOf("relay-b")
		return lag == 0, msg
	})
	// The lag counts messages not yet delivered; the last one delivered
	// may still be being applied.
	eventually(t, "both tasks on B after its return", func() (bool, string) {
		ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 10})
		return err == nil && len(ts) == 2, fmt.Sprintf("tasks on B: %d, %v", len(ts), err)
	})
}

// Ensure an embedded server whose port is taken fails at once, naming why.
func TestEmbedOnATakenPortFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = startEmbedded(ln.Addr().String(), t.TempDir(), "taken", EmbedCredential{})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("embedding on a taken port = %v; want address already in use", err)
	}
}

// jetStreamClient connects a plain JetStream client to url, closed when the
// test ends: what a third party on the NATS server could send.
func jetStreamClient(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
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
