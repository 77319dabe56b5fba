package mesh

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/crosschat/crosschat-relay/internal/store"
)

// On an external cluster set up with `mesh nats-config`, each relay may
// create the stream and the directory bucket when they are missing, so the
// first relay to connect makes them. A hostile relay that connects first
// makes them its way; the relays that come after must not take that
// silently.

// configuredServer starts a NATS server from the configuration `mesh
// nats-config` prints for the relays of ids (the first one "this relay"),
// as an operator would install it, and returns its client URL.
func configuredServer(t *testing.T, ids ...Identity) string {
	t.Helper()
	users := make([]NATSUser, len(ids))
	for i, id := range ids {
		users[i] = natsUser(id.ID, id.Name, id.PublicKey, i == 0)
	}
	return configuredServerWith(t, ids[0], users)
}

// configuredServerWith starts a NATS server configured with users, as
// relay self writes them.
func configuredServerWith(t *testing.T, self Identity, users []NATSUser) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := fmt.Sprintf("listen: \"127.0.0.1:-1\"\njetstream {store_dir: %q}\n%s", t.TempDir(), natsConfigText(self, users, nil))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not take the configuration: %v", err)
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("the configured server did not start")
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}

// Ensure a relay joining an external cluster reports, and in strict mode
// refuses, a stream or directory bucket made to copy the relays' messages
// elsewhere or to lose them, not only one that lets them be deleted or
// purged: relay C, first on the cluster with its own confined user, made
// the stream republish every envelope under its own reply prefix (and
// read A's task to B there), made the directory take the stream's
// messages (which every relay may read), or made the stream keep one
// message; A and B joined in strict mode and said nothing.
func TestNeighbourFirstToMakeTheStreamCannotMakeItLeakOrLose(t *testing.T) {
	for _, tc := range []struct {
		name, stream, config, want string
	}{ // {C} and {B} stand for those relays' ids
		{"republish to C", StreamName,
			`{"name":"CROSSCHAT_MESH","subjects":["crosschat.mesh.>"],"storage":"file","deny_delete":true,"deny_purge":true,` +
				`"republish":{"src":"crosschat.mesh.>","dest":"_INBOX_{C}.spy.>"}}`, "republishes"},
		{"a directory sourcing the stream", dirStream,
			`{"name":"KV_crosschat_directory","subjects":["$KV.crosschat_directory.>"],"storage":"file","max_msgs_per_subject":1,` +
				`"discard":"new","allow_direct":true,"deny_delete":true,"deny_purge":true,"sources":[{"name":"CROSSCHAT_MESH"}]}`, "takes messages from other streams"},
		{"a directory taking B's replies", dirStream,
			`{"name":"KV_crosschat_directory","subjects":["$KV.crosschat_directory.>","_INBOX_{B}.>"],"storage":"file","max_msgs_per_subject":1,` +
				`"discard":"new","allow_direct":true,"deny_delete":true,"deny_purge":true}`, "takes subjects"},
		{"one message kept", StreamName,
			`{"name":"CROSSCHAT_MESH","subjects":["crosschat.mesh.>"],"storage":"file","deny_delete":true,"deny_purge":true,"max_msgs":1,"discard":"old"}`,
			"drops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aDir, bDir, cDir := t.TempDir(), t.TempDir(), t.TempDir()
			ida, idb, idc := identity(t, aDir, "relay-a"), identity(t, bDir, "relay-b"), identity(t, cDir, "relay-c")
			url := configuredServer(t, ida, idb, idc)
			h := connectAs(t, url, idc)
			cfg := strings.NewReplacer("{B}", idb.ID, "{C}", idc.ID).Replace(tc.config)
			if m := h.request(t, "$JS.API.STREAM.CREATE."+tc.stream, nil, []byte(cfg)); strings.Contains(string(m.Data), `"error"`) {
				t.Fatalf("C could not make %s: %s", tc.stream, m.Data)
			}
			spy := make(chan *nats.Msg, 64)
			if _, err := h.nc.ChanSubscribe(inboxPrefix(idc.ID)+".spy.>", spy); err != nil {
				t.Fatal(err)
			}

			db, err := store.Open(filepath.Join(aDir, "relay.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := Start(Options{URLs: []string{url}, DataDir: aDir, Name: "relay-a", Store: db.Mesh(), Strict: true})
			if err == nil {
				n.Close()
				db.Close()
				t.Fatalf("strict mode joined a cluster whose %s C made to leak or lose messages", tc.stream)
			}
			db.Close()
			if !strings.Contains(err.Error(), tc.stream) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("strict refusal = %v; want it to name %s and say it %s", err, tc.stream, tc.want)
			}

			// Without strict mode the relays join (B may not get far when
			// its replies are taken) and say so.
			for _, r := range []*testRelay{startJoining(t, "relay-a", aDir, url), startJoining(t, "relay-b", bDir, url)} {
				eventually(t, r.name+" warns of "+tc.stream, func() (bool, string) {
					st, err := r.node.Status(t.Context())
					if err != nil {
						return false, err.Error()
					}
					return strings.Contains(st.StreamWarning, tc.stream) && strings.Contains(st.StreamWarning, tc.want), st.StreamWarning
				})
			}
		})
	}
}
