package e2e_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// A hostile neighbour with real processes: relay A embeds NATS, relays B
// and C join it with `mesh invite`, and C's operator takes C's own key
// from its data folder to a plain NATS client, as the nats CLI would, and
// tries to read, write, delete and purge what is not C's. NATS refuses
// every attempt; A's operator's tasks to B, sent before and after, arrive
// and complete. In approval mode and in account mode (where a changed key
// would be taken with a warning only: C cannot show one for B).
func TestMeshNeighbourEndToEnd(t *testing.T) {
	if os.Getenv("CROSSCHAT_E2E_MESH") == "" {
		t.Skip("set CROSSCHAT_E2E_MESH=1 (make e2e-mesh) to run the mesh with real processes")
	}
	relayBinary(t)
	for _, mode := range []string{"approval", "account"} {
		t.Run(mode, func(t *testing.T) { neighbourRun(t, mode) })
	}
}

func neighbourRun(t *testing.T, mode string) {
	embed := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	ra := &meshProc{name: "relay-a", dir: t.TempDir(), port: testkit.FreePort(t), meshArgs: []string{"--nats-embed", embed, "--nats-name", "relay-a", "--mesh-trust", mode}}
	ra.start(t)
	invite := func() string {
		var inv struct{ URL, ExpiresAt string }
		if err := json.Unmarshal(cli(t, append([]string{"mesh", "invite", "--json"}, ra.loc()...)...), &inv); err != nil ||
			!strings.Contains(inv.URL, "crosschat:ccm1_") || inv.ExpiresAt == "" {
			t.Fatalf("mesh invite: %+v %v", inv, err)
		}
		return inv.URL
	}
	// B refuses to join with a credential that could delete anything.
	rb := &meshProc{name: "relay-b", dir: t.TempDir(), port: testkit.FreePort(t), meshArgs: []string{"--nats", invite(), "--nats-name", "relay-b", "--mesh-trust", mode, "--nats-strict"}}
	rc := &meshProc{name: "relay-c", dir: t.TempDir(), port: testkit.FreePort(t), meshArgs: []string{"--nats", invite(), "--nats-name", "relay-c", "--mesh-trust", mode}}
	rb.start(t)
	rc.start(t)
	if mode == "approval" {
		trustAll(t, ra, rb, rc)
	}
	bee := addMeshAgent(t, rb, "bee")
	bee.call(t, "heartbeat", map[string]any{}, nil)
	ba := ra.bridge(t)
	postToBee := func(title string) relay.Task {
		t.Helper()
		var task relay.Task
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			err := ba.Call(context.Background(), "Tasks", "Post", &task, map[string]any{"recipientSlug": "bee", "title": title, "instructions": "Say hi."})
			if err == nil {
				return task
			}
			if time.Now().After(deadline) {
				t.Fatalf("post to bee on A: %v", err)
			}
		}
	}
	before := postToBee("Before the neighbour")

	ids := map[string]string{}
	for _, r := range []*meshProc{ra, rb, rc} {
		var st struct{ RelayID string }
		if err := json.Unmarshal(cli(t, append([]string{"mesh", "status", "--json"}, r.loc()...)...), &st); err != nil || st.RelayID == "" {
			t.Fatalf("mesh status on %s: %v", r.name, err)
		}
		ids[r.name] = st.RelayID
	}
	aID, bID, cID := ids["relay-a"], ids["relay-b"], ids["relay-c"]
	h := connectWithRelayKey(t, "nats://"+embed, rc.dir, cID)
	const stream, bucket = "CROSSCHAT_MESH", "KV_crosschat_directory"
	for _, p := range []struct{ what, subject, body string }{
		{"delete the stream", "$JS.API.STREAM.DELETE." + stream, ""},
		{"purge B's subject", "$JS.API.STREAM.PURGE." + stream, `{"filter":"crosschat.mesh.` + bID + `"}`},
		{"shorten the stream's life", "$JS.API.STREAM.UPDATE." + stream, `{"name":"` + stream + `","subjects":["crosschat.mesh.>"],"max_age":1000000000}`},
		{"read a message of the stream", "$JS.API.STREAM.MSG.GET." + stream, `{"seq":1}`},
		{"delete the directory", "$JS.API.STREAM.DELETE." + bucket, ""},
		{"purge the directory", "$JS.API.STREAM.PURGE." + bucket, ""},
		{"delete B's consumer", "$JS.API.CONSUMER.DELETE." + stream + ".relay-" + bID, ""},
		{"delete its own consumer", "$JS.API.CONSUMER.DELETE." + stream + ".relay-" + cID, ""},
		{"consume B's subject", "$JS.API.CONSUMER.CREATE." + stream + ".spy.crosschat.mesh." + bID, `{"stream_name":"` + stream + `","config":{"name":"spy","filter_subject":"crosschat.mesh.` + bID + `"}}`},
		{"pull B's messages", "$JS.API.CONSUMER.MSG.NEXT." + stream + ".relay-" + bID, `{"batch":1}`},
		{"acknowledge B's message", "$JS.ACK." + stream + ".relay-" + bID + ".1.1.1.0.0", ""},
		{"write B's relay entry", "$KV.crosschat_directory.relay." + bID, `{"id":"` + bID + `"}`},
		{"write an agent under B", "$KV.crosschat_directory.agent." + bID + ".bee", `{"slug":"bee"}`},
		{"delete A's entry", "$KV.crosschat_directory.relay." + aID, ""},
	} {
		t.Run(p.what, func(t *testing.T) { h.refusedPublish(t, p.subject, p.body) })
	}
	for _, subj := range []string{"crosschat.mesh." + bID, "crosschat.mesh.>", "_INBOX_" + bID + ".>", ">"} {
		t.Run("subscribe to "+subj, func(t *testing.T) { h.refusedSubscribe(t, subj) })
	}
	after := postToBee("After the neighbour")

	for range 2 {
		var claimed struct{ Task *relay.Task }
		bee.call(t, "claim_next_task", map[string]any{"waitMs": 25000}, &claimed)
		if claimed.Task == nil || (claimed.Task.ID != before.ID && claimed.Task.ID != after.ID) {
			t.Fatalf("bee claimed %+v; want %s or %s", claimed.Task, before.ID, after.ID)
		}
		bee.call(t, "report_task", map[string]any{"taskId": claimed.Task.ID, "kind": "completed", "message": "Hi."}, nil)
	}
	for _, id := range []string{before.ID, after.ID} {
		var d struct{ Task relay.Task }
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := ba.Call(context.Background(), "Tasks", "Get", &d, id); err == nil && d.Task.Status == relay.StatusCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("A's task %s: %+v\nA's log:\n%s", id, d.Task, ra.out.String())
			}
		}
	}
	// A still pins B's own key, and saw no key change.
	var bSelf, onA []struct {
		ID, Fingerprint, NewFingerprint string
		Self                            bool
	}
	_ = json.Unmarshal(cli(t, append([]string{"mesh", "relays", "--json"}, rb.loc()...)...), &bSelf)
	_ = json.Unmarshal(cli(t, append([]string{"mesh", "relays", "--json"}, ra.loc()...)...), &onA)
	fp := ""
	for _, r := range bSelf {
		if r.Self {
			fp = r.Fingerprint
		}
	}
	for _, r := range onA {
		if r.ID == bID && (r.Fingerprint != fp || r.NewFingerprint != "" || fp == "") {
			t.Fatalf("A's record of B: %+v; B's key %s", r, fp)
		}
	}
}

// hostile is a plain NATS client holding a relay's key, recording what
// NATS refuses it.
type hostile struct {
	nc      *nats.Conn
	refused chan error
}

// connectWithRelayKey connects to url as the relay whose data folder is
// dir, with its key (mesh-relay.key) answering the server's nonce.
func connectWithRelayKey(t *testing.T, url, dir, relayID string) *hostile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "mesh-relay.key"))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("relay key in %s: %v", dir, err)
	}
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, seed)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	h := &hostile{refused: make(chan error, 64)}
	h.nc, err = nats.Connect(url, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix("_INBOX_"+relayID), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { h.refused <- err }))
	if err != nil {
		t.Fatalf("connect with the relay's key: %v", err)
	}
	t.Cleanup(h.nc.Close)
	return h
}

var quoted = regexp.MustCompile(`"([^"]*)"`)

// await waits for NATS to refuse what (Publish or Subscription) to
// subject; an answer or a delivery first fails the test.
func (h *hostile) await(t *testing.T, what, subject string, got <-chan *nats.Msg) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-h.refused:
			m := quoted.FindStringSubmatch(err.Error())
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), what) && m != nil && m[1] == subject {
				return
			}
		case m := <-got:
			t.Errorf("%s to %s let through: %s", what, subject, m.Data)
			return
		case <-deadline:
			t.Errorf("%s to %s: not refused", what, subject)
			return
		}
	}
}

func (h *hostile) refusedPublish(t *testing.T, subject, body string) {
	t.Helper()
	inbox := h.nc.NewInbox()
	answer := make(chan *nats.Msg, 1)
	sub, err := h.nc.ChanSubscribe(inbox, answer)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := h.nc.PublishRequest(subject, inbox, []byte(body)); err != nil {
		t.Fatal(err)
	}
	h.await(t, "Publish", subject, answer)
}

func (h *hostile) refusedSubscribe(t *testing.T, subject string) {
	t.Helper()
	got := make(chan *nats.Msg, 16)
	sub, err := h.nc.ChanSubscribe(subject, got)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	h.await(t, "Subscription", subject, got)
}
