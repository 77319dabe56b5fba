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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

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
	if d, err := a.db.Mesh().OutboxDepth(ctx); err != nil || d != n {
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
		d, err := a.db.Mesh().OutboxDepth(ctx)
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
	applied, err := b.db.Mesh().ApplyRemote(ctx, relay.RemoteApply{MsgID: "direct-1", FromRelay: a.node.id.ID, Mark: relay.MarkVerified, Change: relay.MeshChange{Task: m}})
	if err != nil || !applied {
		t.Fatalf("first direct apply = %v, %v", applied, err)
	}
	applied, err = b.db.Mesh().ApplyRemote(ctx, relay.RemoteApply{MsgID: "direct-1", FromRelay: a.node.id.ID, Mark: relay.MarkVerified, Change: relay.MeshChange{Task: m}})
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
	knows(t, a, "bob", "relay-b")
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
			applied, err := db.Mesh().ApplyRemote(ctx, relay.RemoteApply{MsgID: "m-" + task.ID, FromRelay: "0123456789abcdef", Mark: relay.MarkUnverified, Change: relay.MeshChange{Task: task}})
			if err != nil || !applied {
				t.Fatalf("apply = %v, %v; want applied (recorded)", applied, err)
			}
			_, err = db.Task(ctx, task.ID)
			if stored := err == nil; stored != tc.store {
				t.Fatalf("stored = %v (%v); want %v", stored, err, tc.store)
			}
		})
	}
	n, err := db.Mesh().PruneApplied(ctx, -time.Hour)
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
		// Published before the next post, each goes in a message of its
		// own (what one read finds for a relay goes in one).
		eventually(t, "A's outbox published", func() (bool, string) {
			d, err := a.db.Mesh().OutboxDepth(ctx)
			return err == nil && d == 0, fmt.Sprintf("depth %d, %v", d, err)
		})
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
	_, _, err = startEmbedded(ln.Addr().String(), t.TempDir(), "taken", nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("embedding on a taken port = %v; want address already in use", err)
	}
}

// serverConn is relay r's connection to the NATS server srv, nil if it has
// none.
func serverConn(t *testing.T, srv *server.Server, r *testRelay) *server.ConnInfo {
	t.Helper()
	conns, err := srv.Connz(&server.ConnzOptions{Username: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns.Conns {
		if c.Name == "crosschat-relay "+r.name {
			return c
		}
	}
	return nil
}

// TestEmbeddingRelayConnectsInProcess: the relay that runs the NATS server
// reaches it through a pipe in memory, under its own key like any relay;
// another relay connects by the server's URL, over TCP.
func TestEmbeddingRelayConnectsInProcess(t *testing.T) {
	a, b := aliceAndBob(t)
	for _, r := range []*testRelay{a, b} {
		c := serverConn(t, a.node.srv, r)
		switch {
		case c == nil:
			t.Errorf("%s: no connection to the server", r.name)
		case (r == a) != (c.IP == ""):
			t.Errorf("%s connects from %q; want in process for the embedding relay only", r.name, c.IP)
		case c.AuthorizedUser != r.node.id.NKey():
			// The embedding relay is let in as any relay is: by its own key.
			t.Errorf("%s connects as %q, want its own key %q", r.name, c.AuthorizedUser, r.node.id.NKey())
		}
	}
	if !a.node.nc.IsConnected() {
		t.Fatal("relay A is not connected")
	}
}

// The embedding relay's in-process connection survives the server's
// reloads of its users (an invite made, a relay joining, trust): it is not
// closed and made again.
func TestInProcessConnectionSurvivesReloads(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	cid := func() uint64 {
		if c := serverConn(t, a.node.srv, a); c != nil {
			return c.Cid
		}
		return 0
	}
	before, recon := cid(), a.node.nc.Stats().Reconnects
	if before == 0 {
		t.Fatal("no connection")
	}
	b := startRelay(t, "relay-b", "", a.node.InviteURL())
	aliceMeetsBob(t, a, b)
	for range 3 {
		a.node.InviteURL()
	}
	if after := cid(); after != before || a.node.nc.Stats().Reconnects != recon {
		t.Errorf("connection %d -> %d, reconnects %d -> %d", before, after, recon, a.node.nc.Stats().Reconnects)
	}
}

// A relay that embeds a server but is given another's URL connects to that
// URL, not in process to its own server.
func TestEmbedWithURLConnectsByURL(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	b := startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) { o.Embed = "127.0.0.1:-1" }, a.node.InviteURL())
	if b.node.srv == nil {
		t.Fatal("relay B embeds no server")
	}
	if c := serverConn(t, a.node.srv, b); c == nil || c.IP == "" {
		t.Errorf("relay B is not connected to relay A's server by TCP: %+v", c)
	}
}
