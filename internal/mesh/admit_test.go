package mesh

import (
	"encoding/base64"
	"encoding/json"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// lastError is the relay's last error as its status shows it.
func lastError(t *testing.T, r *testRelay) string {
	t.Helper()
	st, err := r.node.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.LastError
}

// startJoining starts a relay with urls without waiting for it to join.
func startJoining(t *testing.T, name, dir string, urls ...string) *testRelay {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	db, err := store.Open(filepath.Join(dir, "relay.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := Start(Options{URLs: urls, DataDir: dir, Name: name, Store: db.Mesh(), Changes: db.Subscribe, Refresh: 5 * time.Second})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	r := &testRelay{name: name, dir: dir, db: db, node: node, svc: relay.WithMesh(db, node)}
	t.Cleanup(r.stop)
	return r
}

// joined waits until r has joined the mesh.
func joined(t *testing.T, r *testRelay) {
	t.Helper()
	select {
	case <-r.node.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not join: %s", r.name, lastError(t, r))
	}
}

// Ensure an invite lets exactly one relay in, once: a second relay with the
// same invite, or one with an expired invite, is refused and says why;
// the relay that used it starts again with the same URL.
func TestInviteIsSingleUseAndExpires(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	url := a.node.InviteURL()
	b := startJoining(t, "relay-b", "", url)
	joined(t, b)
	c := startJoining(t, "relay-c", "", url)
	eventually(t, "C told the invite is spent", func() (bool, string) {
		e := lastError(t, c)
		return strings.Contains(e, "the invite was used") || strings.Contains(e, "does not know the invite"), e
	})
	select {
	case <-c.node.Ready():
		t.Fatal("a second relay joined with a used invite")
	default:
	}

	tok, _, err := a.node.adm.newInvite(time.Now(), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := a.node.readmit(t.Context()); err != nil {
		t.Fatal(err)
	}
	u := a.node.embedURL()
	u.User = neturl.UserPassword(embedURLUser, tok.String())
	d := startJoining(t, "relay-d", "", u.String())
	eventually(t, "D told the invite expired", func() (bool, string) {
		e := lastError(t, d)
		return strings.Contains(e, "does not know the invite"), e
	})

	dir := b.dir
	b.stop()
	joined(t, startJoining(t, "relay-b", dir, url)) // the same command line again
	a.node.adm.mu.Lock()
	members, open := len(a.node.adm.st.Members), len(a.node.adm.st.Invites)
	a.node.adm.mu.Unlock()
	if members != 1 || open != 0 {
		t.Fatalf("A admitted %d relays and keeps %d open invites; want 1 and 0 (the expired one dropped)", members, open)
	}
}

// Ensure admission cannot take another relay's identity or key: an invite
// presented for B's relay id with another key, for a key that is not the
// presenter's, or for this relay's own id, is refused, and the invite stays
// usable for a genuine relay.
func TestInviteCannotTakeAnotherRelaysPlace(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	b := startRelay(t, "relay-b", "", a.node.InviteURL())
	trustEachOther(t, a, b)
	u, err := a.node.Invite()
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := splitURLs([]string{u.URL})
	nc, err := nats.Connect(a.node.ClientURL(), nats.UserInfo(inviteUser(tok.id), tok.secret), nats.CustomInboxPrefix(inboxPrefix("admit_"+tok.id)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	mallory := identity(t, t.TempDir(), "mallory")
	present := func(signer Identity, id, nkey string) admitAnswer {
		t.Helper()
		sig, _ := signer.signNonce(admitSigned(tok.id, id, nkey))
		body, _ := json.Marshal(admitRequest{Secret: tok.secret, RelayID: id, Name: "x", NKey: nkey, Sig: base64.StdEncoding.EncodeToString(sig)})
		m, err := nc.Request(admitSubject(tok.id), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ans admitAnswer
		if err := json.Unmarshal(m.Data, &ans); err != nil {
			t.Fatal(err)
		}
		return ans
	}
	for _, tc := range []struct {
		name        string
		signer      Identity
		id, nkey    string
		errContains string
	}{
		{"B's id with another key", mallory, b.node.id.ID, mallory.NKey(), "admitted with another key"},
		{"B's key, not held", mallory, mallory.ID, b.node.id.NKey(), "not signed by the key"},
		{"A's own id", mallory, a.node.id.ID, mallory.NKey(), "this relay's own"},
		{"not a relay id", mallory, "relay-b", mallory.NKey(), "not a relay id"},
	} {
		if ans := present(tc.signer, tc.id, tc.nkey); ans.Admitted || !strings.Contains(ans.Error, tc.errContains) {
			t.Errorf("%s: %+v; want refused (%s)", tc.name, ans, tc.errContains)
		}
	}
	if ans := present(mallory, mallory.ID, mallory.NKey()); !ans.Admitted {
		t.Fatalf("a genuine relay with the same invite: %+v", ans)
	}
	h := connectAs(t, a.node.ClientURL(), mallory)
	h.publishRefused(t, dirSubjectPrefix+"relay."+b.node.id.ID, nil, []byte("{}"))
}

// Ensure blocking a relay cuts its NATS user at once (its connection and a
// neighbour's with its key are closed, and it cannot come back), and
// trusting it again lets it back in.
func TestBlockCutsTheRelaysNATSUser(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	c := startRelay(t, "relay-c", "", a.node.InviteURL())
	trustEachOther(t, a, c)
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	closed := make(chan struct{})
	h.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if _, err := a.node.SetTrust(t.Context(), c.node.id.ID, relay.RelayBlocked, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked relay's key kept its connection")
	}
	eventually(t, "C cut off", func() (bool, string) {
		e := lastError(t, c)
		return c.node.Link() != "connected" && strings.Contains(e, "does not admit this relay"), c.node.Link() + " " + e
	})
	if _, err := nats.Connect(a.node.ClientURL(), nats.Nkey(c.node.id.NKey(), c.node.id.signNonce), nats.MaxReconnects(0)); err == nil {
		t.Fatal("the blocked relay's key connected again")
	}
	if _, err := a.node.SetTrust(t.Context(), c.node.id.ID, relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "C back", func() (bool, string) { return c.node.Link() == "connected", c.node.Link() })
	createAgent(t, c, "carol")
	createAgent(t, a, "alice")
	knows(t, a, "carol", "relay-c")
	task := post(t, a, "alice", "carol", "After the block")
	arrives(t, c, task.ID)
}

// Ensure a data folder of an earlier version keeps working: its shared
// password file is retired, the directory bucket made without deletion and
// purge refused is changed to refuse them, and a relay it trusts, started
// with the old URL and its password, joins with its own key.
func TestUpgradeFromTheSharedPassword(t *testing.T) {
	aDir, bDir := t.TempDir(), t.TempDir()
	a := startRelay(t, "relay-a", aDir)
	b := startRelay(t, "relay-b", bDir, a.node.InviteURL())
	trustEachOther(t, a, b)
	port := a.node.srv.Addr().String()
	a.stop()
	b.stop()
	// What an earlier version left: no admissions file, the shared
	// password, a bucket that lets anyone purge it.
	if err := os.Remove(filepath.Join(aDir, admitFile)); err != nil {
		t.Fatal(err)
	}
	const oldPassword = "3f9c00112233445566778899aabbccddeeff00112233445566778899aabbccdd"
	if err := os.WriteFile(filepath.Join(aDir, legacyCredFile), []byte(`{"user":"crosschat","password":"`+oldPassword+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := startServer(t, filepath.Join(aDir, "nats"), 0)
	js := jetStreamClient(t, old.ClientURL())
	if err := js.DeleteStream(t.Context(), dirStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: BucketName, TTL: 15 * time.Second, History: 1, MaxValueSize: maxDirEntry, MaxBytes: maxDirBytes}); err != nil {
		t.Fatal(err)
	}
	old.Shutdown()
	old.WaitForShutdown()

	a = startRelayWith(t, "relay-a", aDir, store.Options{}, func(o *Options) { o.Embed = port })
	if _, err := os.Stat(filepath.Join(aDir, legacyCredFile)); !os.IsNotExist(err) {
		t.Fatalf("the shared password file is still there: %v", err)
	}
	s, err := jetStreamClient(t, a.node.ClientURL()).Stream(t.Context(), dirStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; !cfg.DenyPurge || !cfg.DenyDelete || cfg.AllowRollup {
		t.Fatalf("the old bucket still lets anyone purge it: %+v", cfg)
	}
	b = startRelay(t, "relay-b", bDir, "nats://crosschat:"+oldPassword+"@"+port)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	roundTrip(t, a, b, "after the upgrade")
	if c := b.node.Credential(); !c.Confined() {
		t.Fatalf("B's credential after the upgrade: %+v", c)
	}
}
