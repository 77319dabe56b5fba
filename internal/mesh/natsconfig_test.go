package mesh

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure a credential that can delete and purge what the mesh keeps is
// reported when the relay joins (status and all that it can), and refused
// in strict mode before the relay joins, naming what to do.
func TestStrictRefusesAnUnconfinedCredential(t *testing.T) {
	srv := startServer(t, t.TempDir(), 0)
	t.Cleanup(srv.Shutdown)
	a := startRelay(t, "relay-a", "", srv.ClientURL())
	st, err := a.node.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"delete consumers", "delete messages", "delete streams", "delete the directory bucket", "purge streams", "update streams"}
	if !st.Credential.Checked || !slices.Equal(st.Credential.Can, want) || st.Strict {
		t.Fatalf("credential = %+v strict %v; want it to be able to %v", st.Credential, st.Strict, want)
	}

	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "relay.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := Start(Options{URLs: []string{srv.ClientURL()}, DataDir: dir, Name: "strict", Store: db.Mesh(), Strict: true})
	if err == nil {
		n.Close()
		t.Fatal("strict mode joined with a credential that can delete streams")
	}
	if !strings.Contains(err.Error(), "can delete consumers, delete messages, delete streams") || !strings.Contains(err.Error(), "mesh nats-config") {
		t.Fatalf("strict refusal = %v", err)
	}
}

// Ensure strict mode joins with a relay's own user on the embedded server:
// the invite is presented before the check, which finds nothing the
// credential should not do.
func TestStrictJoinsWithTheRelaysOwnUser(t *testing.T) {
	a := startRelayWith(t, "relay-a", "", store.Options{}, func(o *Options) { o.Strict = true })
	b := startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) { o.Strict = true }, a.node.InviteURL())
	for _, r := range []*testRelay{a, b} {
		if c := r.node.Credential(); !c.Confined() {
			t.Fatalf("%s: credential %+v; want confined", r.name, c)
		}
	}
	trustEachOther(t, a, b)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	roundTrip(t, a, b, "strict")
}

// Ensure what `mesh nats-config` prints is a configuration nats-server
// takes, and that with it relays join an external server by their own
// keys, in strict mode, the first making the stream and bucket as they
// must be; each relay is confined to its own subjects and no anonymous
// client gets in.
func TestNATSConfigOnAnExternalServer(t *testing.T) {
	open := startServer(t, t.TempDir(), 0)
	aDir, bDir := t.TempDir(), t.TempDir()
	a := startRelay(t, "relay-a", aDir, open.ClientURL())
	b := startRelay(t, "relay-b", bDir, open.ClientURL())
	trustEachOther(t, a, b)
	cfg, err := a.node.NATSConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Users) != 2 || !cfg.Users[0].Self || cfg.Users[1].NKey != b.node.id.NKey() {
		t.Fatalf("users = %+v", cfg.Users)
	}
	a.stop()
	b.stop()
	open.Shutdown()

	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := fmt.Sprintf("listen: \"127.0.0.1:-1\"\njetstream {store_dir: %q}\n%s", t.TempDir(), cfg.Text)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not take the configuration: %v\n%s", err, cfg.Text)
	}
	opts.NoSigs, opts.NoLog = true, true
	ext, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ext.Start()
	if !ext.ReadyForConnections(30 * time.Second) {
		t.Fatal("the configured server did not start")
	}
	t.Cleanup(ext.Shutdown)
	if nc, err := nats.Connect(ext.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an anonymous client got in")
	}
	strict := func(o *Options) { o.Strict = true }
	a = startRelayWith(t, "relay-a", aDir, store.Options{}, strict, ext.ClientURL())
	b = startRelayWith(t, "relay-b", bDir, store.Options{}, strict, ext.ClientURL())
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	roundTrip(t, a, b, "on the external server")

	h := connectAs(t, ext.ClientURL(), b.node.id)
	h.publishRefused(t, "$JS.API.STREAM.DELETE."+StreamName, nil, nil)
	h.publishRefused(t, "$JS.API.CONSUMER.DELETE."+StreamName+"."+consumerName(a.node.id.ID), nil, nil)
	h.publishRefused(t, dirSubjectPrefix+"relay."+a.node.id.ID, nil, []byte("{}"))
	h.subscribeRefused(t, subject(a.node.id.ID))
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []jetstream.StreamConfig{meshStreamConfig(1), dirStreamConfig(5*time.Second, 1)} {
		s, err := js.Stream(t.Context(), want.Name)
		if err != nil {
			t.Fatalf("stream %s: %v", want.Name, err)
		}
		if c := s.CachedInfo().Config; len(streamRisks(c, want)) != 0 {
			t.Fatalf("stream %s as the first relay made it: %v (%+v)", want.Name, streamRisks(c, want), c)
		}
	}
}

// Ensure a relay reads whether the server asks for a key: one that asks
// for no credential is joined without one; a relay that started while no
// server answered offers its key, and when the server that comes up asks
// for no credential its status says to restart it, after which it joins.
func TestKeyOfferedOnlyWhenTheServerAsks(t *testing.T) {
	port := testkit.FreePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	early := startJoining(t, "early", "", url)
	srv := startServer(t, t.TempDir(), port)
	t.Cleanup(srv.Shutdown)
	eventually(t, "the early relay told to restart", func() (bool, string) {
		e := lastError(t, early)
		return strings.Contains(e, "asks for no credential") && strings.Contains(e, "restart the relay"), e
	})
	dir := early.dir
	early.stop()
	again := startRelay(t, "early", dir, url)
	if c := again.node.Credential(); len(c.Can) == 0 {
		t.Fatalf("credential on an open server: %+v", c)
	}
}
