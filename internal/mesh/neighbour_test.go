package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// A hostile neighbour: relay C was invited and admitted, and its operator
// uses C's own NATS credential (its key) with a plain client, as the nats
// CLI would, to read, write, delete and purge what is not C's.

// neighbour is a plain NATS client connected as a relay's own user,
// recording what NATS refuses it.
type neighbour struct {
	nc      *nats.Conn
	refused chan error
}

// connectAs connects to url as id's NATS user (its key answering the
// nonce), with replies under id's own inbox prefix.
func connectAs(t *testing.T, url string, id Identity) *neighbour {
	t.Helper()
	h := &neighbour{refused: make(chan error, 64)}
	nc, err := nats.Connect(url, nats.Nkey(id.NKey(), id.signNonce), nats.CustomInboxPrefix(inboxPrefix(id.ID)), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { h.refused <- err }))
	if err != nil {
		t.Fatalf("connect as %s: %v", id.Name, err)
	}
	t.Cleanup(nc.Close)
	h.nc = nc
	return h
}

// awaitRefusal waits for NATS to refuse what (Publish to or Subscription
// to) subject; anything else in the meantime fails the test.
func (h *neighbour) awaitRefusal(t *testing.T, what, subject string, answer <-chan *nats.Msg) {
	t.Helper()
	want := fmt.Sprintf("%s to %q", what, subject)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-h.refused:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
			t.Logf("(other refusal while waiting: %v)", err)
		case m := <-answer:
			t.Errorf("%s was let through: answered %s", want, m.Data)
			return
		case <-deadline:
			t.Errorf("%s: NATS did not refuse it", want)
			return
		}
	}
}

// publishRefused publishes to subject (with a reply inbox, as a request
// would) and expects NATS to refuse it.
func (h *neighbour) publishRefused(t *testing.T, subject string, hdr nats.Header, body []byte) {
	t.Helper()
	inbox := h.nc.NewInbox()
	answer := make(chan *nats.Msg, 1)
	sub, err := h.nc.ChanSubscribe(inbox, answer)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := h.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Header: hdr, Data: body}); err != nil {
		t.Fatal(err)
	}
	h.awaitRefusal(t, "Publish", subject, answer)
}

// subscribeRefused subscribes to subject and expects NATS to refuse it.
func (h *neighbour) subscribeRefused(t *testing.T, subject string) {
	t.Helper()
	got := make(chan *nats.Msg, 16)
	sub, err := h.nc.ChanSubscribe(subject, got)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	h.awaitRefusal(t, "Subscription", subject, got)
}

// request sends a request NATS lets through and returns the answer.
func (h *neighbour) request(t *testing.T, subject string, hdr nats.Header, body []byte) *nats.Msg {
	t.Helper()
	m, err := h.nc.RequestMsg(&nats.Msg{Subject: subject, Header: hdr, Data: body}, 5*time.Second)
	if err != nil {
		t.Fatalf("request to %s: %v", subject, err)
	}
	return m
}

// threeRelays starts relay A embedding NATS with agent alice, and relays B
// (agent bob) and C, each joined with an invite; all trust each other.
func threeRelays(t *testing.T, mod func(*Options)) (a, b, c *testRelay) {
	t.Helper()
	a = startRelayWith(t, "relay-a", "", store.Options{}, mod)
	b = startRelayWith(t, "relay-b", "", store.Options{}, mod, a.node.InviteURL())
	c = startRelayWith(t, "relay-c", "", store.Options{}, mod, a.node.InviteURL())
	trustEachOther(t, a, b, c)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	return a, b, c
}

// roundTrip posts a task from alice on A to bob on B, which bob claims and
// completes, and waits for A to see it completed.
func roundTrip(t *testing.T, a, b *testRelay, title string) {
	t.Helper()
	task := post(t, a, "alice", "bob", title)
	arrives(t, b, task.ID)
	got := claims(t, b, "bob")
	if got.ID != task.ID {
		t.Fatalf("bob claimed %s; want %s", got.ID, task.ID)
	}
	if _, err := b.svc.ReportTask(t.Context(), relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "done"}); err != nil {
		t.Fatal(err)
	}
	reaches(t, a, task.ID, relay.StatusCompleted)
}

// Ensure an invited relay's own credential reads, writes, deletes and
// purges nothing that is not its own: every attempt is refused by NATS,
// and tasks sent before and after the attempts arrive and complete.
func TestNeighbourConfinedToItsOwnSubjects(t *testing.T) {
	a, b, c := threeRelays(t, nil)
	roundTrip(t, a, b, "before the neighbour")
	bID, cID, aID := b.node.id.ID, c.node.id.ID, a.node.id.ID
	h := connectAs(t, a.node.ClientURL(), c.node.id)

	for _, p := range []struct {
		name, subject string
		hdr           nats.Header
		body          string
	}{
		{"delete the stream", "$JS.API.STREAM.DELETE." + StreamName, nil, ""},
		{"purge the stream", "$JS.API.STREAM.PURGE." + StreamName, nil, ""},
		{"purge B's subject", "$JS.API.STREAM.PURGE." + StreamName, nil, `{"filter":"` + subject(bID) + `"}`},
		{"shorten the stream's life", "$JS.API.STREAM.UPDATE." + StreamName, nil, `{"name":"` + StreamName + `","subjects":["crosschat.mesh.>"],"max_age":1000000000}`},
		{"delete a message", "$JS.API.STREAM.MSG.DELETE." + StreamName, nil, `{"seq":1}`},
		{"read a message of the stream", "$JS.API.STREAM.MSG.GET." + StreamName, nil, `{"seq":1}`},
		{"read B's last message directly", "$JS.API.DIRECT.GET." + StreamName + "." + subject(bID), nil, ""},
		{"delete the directory bucket", "$JS.API.STREAM.DELETE." + dirStream, nil, ""},
		{"purge the directory bucket", "$JS.API.STREAM.PURGE." + dirStream, nil, ""},
		{"change the directory bucket", "$JS.API.STREAM.UPDATE." + dirStream, nil, `{"name":"` + dirStream + `","subjects":["$KV.crosschat_directory.>"]}`},
		{"delete a directory entry's message", "$JS.API.STREAM.MSG.DELETE." + dirStream, nil, `{"seq":1}`},
		{"delete B's consumer", "$JS.API.CONSUMER.DELETE." + StreamName + "." + consumerName(bID), nil, ""},
		{"delete its own consumer", "$JS.API.CONSUMER.DELETE." + StreamName + "." + consumerName(cID), nil, ""},
		{"pause B's consumer", "$JS.API.CONSUMER.PAUSE." + StreamName + "." + consumerName(bID), nil, `{}`},
		{"consume B's subject with a consumer of its own", "$JS.API.CONSUMER.CREATE." + StreamName + ".spy." + subject(bID), nil,
			`{"stream_name":"` + StreamName + `","config":{"name":"spy","filter_subject":"` + subject(bID) + `","ack_policy":"explicit"}}`},
		{"take B's consumer over", "$JS.API.CONSUMER.CREATE." + StreamName + "." + consumerName(bID) + "." + subject(bID), nil,
			`{"stream_name":"` + StreamName + `","config":{"durable_name":"` + consumerName(bID) + `","filter_subject":"` + subject(bID) + `","ack_policy":"none"}}`},
		{"an ephemeral consumer of the stream", "$JS.API.CONSUMER.CREATE." + StreamName, nil, `{"stream_name":"` + StreamName + `","config":{}}`},
		{"a durable of the old kind", "$JS.API.CONSUMER.DURABLE.CREATE." + StreamName + ".spy", nil, `{"stream_name":"` + StreamName + `","config":{"durable_name":"spy"}}`},
		{"pull B's messages", "$JS.API.CONSUMER.MSG.NEXT." + StreamName + "." + consumerName(bID), nil, `{"batch":1}`},
		{"acknowledge B's message", "$JS.ACK." + StreamName + "." + consumerName(bID) + ".1.1.1.0.0", nil, ""},
		{"terminate B's message", "$JS.ACK." + StreamName + "." + consumerName(bID) + ".1.2.2.0.0", nil, "+TERM"},
		{"list the consumers", "$JS.API.CONSUMER.LIST." + StreamName, nil, ""},
		{"read B's consumer", "$JS.API.CONSUMER.INFO." + StreamName + "." + consumerName(bID), nil, ""},
		{"list the directory's watches", "$JS.API.CONSUMER.NAMES." + dirStream, nil, ""},
		{"write B's relay entry", dirSubjectPrefix + "relay." + bID, nil, `{"id":"` + bID + `"}`},
		{"write an agent entry under B", dirSubjectPrefix + "agent." + bID + ".bob", nil, `{"slug":"bob"}`},
		{"delete A's agent entry", dirSubjectPrefix + "agent." + aID + ".alice", nats.Header{"KV-Operation": []string{"DEL"}}, ""},
		{"make a stream of its own", "$JS.API.STREAM.CREATE.SPY", nil, `{"name":"SPY","subjects":["spy.>"]}`},
		{"make another copy of the stream", "$JS.API.STREAM.CREATE.SPY", nil, `{"name":"SPY","sources":[{"name":"` + StreamName + `"}]}`},
		{"snapshot the stream", "$JS.API.STREAM.SNAPSHOT." + StreamName, nil, `{"deliver_subject":"` + inboxPrefix(cID) + `.snap"}`},
	} {
		t.Run(p.name, func(t *testing.T) { h.publishRefused(t, p.subject, p.hdr, []byte(p.body)) })
	}
	for _, subj := range []string{subject(bID), subjectPrefix + ">", ">", inboxPrefix(bID) + ".>", "_INBOX.>", "$JS.ACK.>", dirSubjectPrefix + ">"} {
		t.Run("subscribe to "+subj, func(t *testing.T) { h.subscribeRefused(t, subj) })
	}

	// What NATS lets through, JetStream itself refuses.
	t.Run("roll the directory up through its own key", func(t *testing.T) {
		m := h.request(t, dirSubjectPrefix+"relay."+cID, nats.Header{"Nats-Rollup": []string{"all"}}, []byte(`{}`))
		if !strings.Contains(string(m.Data), "rollup") {
			t.Fatalf("a roll-up of the bucket = %s; want it refused", m.Data)
		}
	})
	t.Run("widen its own consumer to B's subject", func(t *testing.T) {
		h.publishRefused(t, "$JS.API.CONSUMER.CREATE."+StreamName+"."+consumerName(cID)+"."+subject(cID), nil,
			[]byte(`{"stream_name":"`+StreamName+`","config":{"durable_name":"`+consumerName(cID)+`","filter_subjects":["`+subject(bID)+`"],"ack_policy":"explicit"}}`))
	})
	t.Run("a directory consumer delivering into B's inbox", func(t *testing.T) {
		js := jetStreamClient(t, a.node.ClientURL())
		before, err := js.Stream(t.Context(), StreamName)
		if err != nil {
			t.Fatal(err)
		}
		h.publishRefused(t, "$JS.API.CONSUMER.CREATE."+dirStream+".push."+dirSubjectPrefix+">", nil,
			[]byte(`{"stream_name":"`+dirStream+`","config":{"name":"push","deliver_subject":"`+subject(bID)+`","filter_subject":"`+dirSubjectPrefix+`>"}}`))
		after, err := js.Stream(t.Context(), StreamName)
		if err != nil {
			t.Fatal(err)
		}
		if b, a := before.CachedInfo().State.Msgs, after.CachedInfo().State.Msgs; a != b {
			t.Fatalf("the stream went from %d to %d messages: the directory was delivered into B's inbox", b, a)
		}
	})
	// Inboxes are meant to be written: junk in B's is refused by B, unapplied.
	applied := b.node.applied.Load()
	if m := h.request(t, subject(bID), nil, []byte("not an envelope")); !strings.Contains(string(m.Data), `"stream"`) {
		t.Fatalf("publish to B's inbox = %s; want a stream acknowledgement", m.Data)
	}
	eventually(t, "B refuses the junk", func() (bool, string) {
		return b.node.Refused()[RefusedUndecodable] == 1, fmt.Sprint(b.node.Refused())
	})

	// Everything is where it was, and the mesh goes on.
	js := jetStreamClient(t, a.node.ClientURL())
	ctx := t.Context()
	for _, name := range []string{StreamName, dirStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if cfg := s.CachedInfo().Config; !cfg.DenyDelete || !cfg.DenyPurge || cfg.AllowRollup {
			t.Fatalf("stream %s allows deletes, purges or roll-ups: %+v", name, cfg)
		}
	}
	for _, id := range []string{aID, bID, cID} {
		if _, err := js.Consumer(ctx, StreamName, consumerName(id)); err != nil {
			t.Fatalf("consumer of %s: %v", id, err)
		}
	}
	e, err := bucketClient(t, a.node.ClientURL()).Get(ctx, relayKey(bID))
	if err != nil {
		t.Fatalf("B's relay entry: %v", err)
	}
	var r dirRelay
	if json.Unmarshal(e.Value(), &r) != nil || r.PublicKey != b.node.id.PublicKey {
		t.Fatalf("B's relay entry = %s", e.Value())
	}
	roundTrip(t, a, b, "after the neighbour")
	if got := b.node.applied.Load(); got <= applied {
		t.Fatalf("B applied nothing after the attempts (%d)", got)
	}
	if _, err := js.Stream(ctx, "SPY"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream SPY = %v; want none", err)
	}
}

// Ensure that with --mesh-trust account, where a relay's changed key is
// taken with a warning only, an invited relay cannot replace another's
// key: NATS refuses it B's directory entry, and a task it forges in B's
// name, signed with its own key, is refused by A and never stored, while
// B's genuine task arrives.
func TestNeighbourCannotSpeakForAnotherRelayInAccountMode(t *testing.T) {
	a, b, c := threeRelays(t, func(o *Options) { o.TrustAccount = true })
	bID := b.node.id.ID
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	forgedEntry := dirRelay{ID: bID, Name: "relay-b", PublicKey: c.node.id.PublicKey, At: time.Now().UnixMilli()}
	forgedEntry.Sig = c.node.id.sign(forgedEntry.signedBytes())
	raw, _ := json.Marshal(forgedEntry)
	h.publishRefused(t, dirSubjectPrefix+"relay."+bID, nil, raw)

	now := time.Now()
	forged := relay.Task{ID: relay.NewID(), SenderSlug: "operator", RecipientSlug: "alice", Title: "Forged in B's name", Instructions: "x",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: relay.FormatTime(now), UpdatedAt: relay.FormatTime(now)}
	data, err := seal(Identity{ID: bID, Name: "relay-b", PublicKey: c.node.id.PublicKey, priv: c.node.id.priv}, "forged-1", a.node.id.ID, relay.MeshChange{Task: forged})
	if err != nil {
		t.Fatal(err)
	}
	if m := h.request(t, subject(a.node.id.ID), nil, data); !strings.Contains(string(m.Data), `"stream"`) {
		t.Fatalf("publish to A's inbox = %s", m.Data)
	}
	eventually(t, "A refuses the forged task", func() (bool, string) {
		return a.node.Refused()[RefusedSignature] == 1, fmt.Sprint(a.node.Refused())
	})
	if _, err := a.svc.Task(t.Context(), forged.ID); err == nil {
		t.Fatal("A stored the task forged in B's name")
	}
	st, err := a.node.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 0 {
		t.Fatalf("A saw a key change: %v", st.Warnings)
	}
	for _, r := range st.Relays {
		if r.ID == bID && (r.Fingerprint != Fingerprint(b.node.id.PublicKey) || r.NewFingerprint != "") {
			t.Fatalf("A's record of B: %+v", r)
		}
	}
	knows(t, b, "alice", "relay-a")
	genuine := post(t, b, "bob", "alice", "From B itself")
	arrives(t, a, genuine.ID)
}

// Ensure a relay's own subjects are all it needs: through a round trip,
// agents coming, going and retiring, status, invites, a restart and a relay away and
// back, NATS refuses no relay anything (every reply comes under its own
// inbox prefix, every JetStream call it makes is granted).
func TestOwnSubjectsAreEnough(t *testing.T) {
	var logs testkit.Buffer
	logged := func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a := startRelayWith(t, "relay-a", "", store.Options{}, logged)
	url := a.node.InviteURL()
	b := startRelayWith(t, "relay-b", "", store.Options{}, logged, url)
	trustEachOther(t, a, b)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	roundTrip(t, a, b, "one")
	createAgent(t, b, "bee")
	knows(t, a, "bee", "relay-b")
	if err := b.svc.DeleteAgent(t.Context(), "bee"); err != nil {
		t.Fatal(err)
	}
	// A retired agent takes no tasks: it leaves the directory, its entry
	// deleted under B's own key.
	createAgent(t, b, "bea")
	knows(t, a, "bea", "relay-b")
	listed := func() bool {
		a.node.mu.Lock()
		defer a.node.mu.Unlock()
		_, ok := a.node.agents[agentKey(b.node.id.ID, "bea")]
		return ok
	}
	if !listed() {
		t.Fatal("A knows bea, but not by its directory entry")
	}
	if err := b.svc.RetireAgent(t.Context(), "bea"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bea's entry deleted by B, not left to expire", func() (bool, string) {
		es, err := b.node.readDirectory(t.Context(), "agent."+b.node.id.ID+".bea", 0)
		if err != nil || len(es) != 1 {
			return false, fmt.Sprintf("%d entries, %v", len(es), err)
		}
		return es[0].Operation() == jetstream.KeyValueDelete, "last operation " + es[0].Operation().String()
	})
	eventually(t, "A's directory without the retired bea", func() (bool, string) { return !listed(), "bea still listed" })
	for _, r := range []*testRelay{a, b} {
		if _, err := r.node.Status(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.node.Invite(); err != nil {
		t.Fatal(err)
	}
	dir := b.dir
	b.stop()
	task := post(t, a, "alice", "bob", "while B is away")
	b = startRelayWith(t, "relay-b", dir, store.Options{}, logged, url)
	arrives(t, b, task.ID)
	if got := claims(t, b, "bob"); got.ID != task.ID {
		t.Fatalf("bob claimed %s; want %s", got.ID, task.ID)
	}
	roundTrip(t, a, b, "two")
	if out := logs.String(); strings.Contains(out, "refused this relay") || strings.Contains(out, "Permissions Violation") {
		t.Fatalf("NATS refused a relay its own work:\n%s", out)
	}
}
