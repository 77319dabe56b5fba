package mesh

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/store"
)

// Ensure an invited relay makes no consumer of the directory's stream.
// One it made could deliver to any subject of the account with the
// server's rights, past its permissions: an untrusted invitee pointed one
// at B's consumer's reset subject and wrote {"seq":1000000000} to its own
// key, and B's consumer skipped past every message, tasks from A
// included; pointed at B's pull subject, its entries held B's deliveries.
// The directory is read with direct gets; C's attempts are refused and
// A's tasks reach B.
func TestNeighbourMakesNoConsumerOfTheDirectory(t *testing.T) {
	a := startRelayWith(t, "relay-a", "", store.Options{}, nil)
	b := startRelayWith(t, "relay-b", "", store.Options{}, nil, a.node.InviteURL())
	c := startRelayWith(t, "relay-c", "", store.Options{}, nil, a.node.InviteURL())
	trustEachOther(t, a, b) // C is invited, trusted by nobody
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	bcons := consumerName(b.node.id.ID)
	key := dirSubjectPrefix + "agent." + c.node.id.ID + ".x"
	for _, to := range []string{"$JS.API.CONSUMER.RESET." + StreamName + "." + bcons, "$JS.API.CONSUMER.MSG.NEXT." + StreamName + "." + bcons} {
		body := []byte(`{"stream_name":"` + dirStream + `","config":{"durable_name":"x","ack_policy":"explicit","filter_subject":"` + key + `","deliver_subject":"` + to + `"}}`)
		h.publishRefused(t, "$JS.API.CONSUMER.CREATE."+dirStream+".x", nil, body)
		h.publishRefused(t, "$JS.API.CONSUMER.CREATE."+dirStream+".x."+key, nil, body)
		h.publishRefused(t, "$JS.API.CONSUMER.CREATE."+dirStream, nil, body)
	}
	h.publishRefused(t, "$JS.API.CONSUMER.DELETE."+dirStream+".x", nil, nil)
	// What the consumers would have delivered, written to C's own key.
	for _, v := range []string{`{"seq":1000000000}`, `{"batch":256,"expires":0}`} {
		if err := h.nc.Publish(key, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		arrives(t, b, post(t, a, "alice", "bob", fmt.Sprint("after ", i)).ID)
	}
}

// Ensure an invited relay's own consumer of the stream is pulled, made by
// the relay that embeds NATS before the invitee is let in: the invitee may
// make its consumer itself (an external cluster has no one else to), and
// made first as one that pushes, it delivered its own messages to any
// subject of the account, B's consumer's reset subject too. Its attempt to
// turn it is refused; one found pushing (made before) is made again pulled.
func TestNeighbourOwnConsumerStaysPulled(t *testing.T) {
	a, b, c := threeRelays(t, nil)
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	ccons := consumerName(c.node.id.ID)
	reset := "$JS.API.CONSUMER.RESET." + StreamName + "." + consumerName(b.node.id.ID)
	m := h.request(t, "$JS.API.CONSUMER.CREATE."+StreamName+"."+ccons+"."+subject(c.node.id.ID), nil,
		[]byte(`{"stream_name":"`+StreamName+`","config":{"durable_name":"`+ccons+`","ack_policy":"explicit","filter_subject":"`+subject(c.node.id.ID)+`","deliver_subject":"`+reset+`"}}`))
	if !strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("C turned its consumer into one pushing to B's reset subject: %s", m.Data)
	}
	// A consumer made pushing before this version is made again.
	js, err := jetstream.New(a.node.admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(t.Context(), StreamName, ccons); err != nil {
		t.Fatal(err)
	}
	cfg := consumerConfig(c.node.id.ID, 1)
	cfg.DeliverSubject = inboxPrefix(c.node.id.ID) + ".push"
	if _, err := js.CreateConsumer(t.Context(), StreamName, cfg); err != nil {
		t.Fatal(err)
	}
	if err := a.node.relayConsumers([]string{c.node.id.ID}); err != nil {
		t.Fatal(err)
	}
	got, err := js.Consumer(t.Context(), StreamName, ccons)
	if err != nil || got.CachedInfo().Config.DeliverSubject != "" {
		t.Fatalf("C's consumer after relayConsumers: %+v, %v; want it pulled", got, err)
	}
	roundTrip(t, a, b, "after")
}

// Ensure the relay that embeds NATS starts on a directory made before the
// bound on its consumers, though a consumer made then asks to be kept idle
// longer than the bound (the server then refuses to change the stream):
// it says so and uses the stream as it is, rather than retrying its setup
// for ever.
func TestDirectoryFromBeforeTheConsumerBound(t *testing.T) {
	old := dirConsumerIdle
	t.Cleanup(func() { dirConsumerIdle = old })
	dirConsumerIdle = 0 // as an earlier version made it
	a := startRelay(t, "relay-a", "")
	js := jetStreamClient(t, a.node.ClientURL())
	if _, err := js.CreateOrUpdateConsumer(t.Context(), dirStream, jetstream.ConsumerConfig{Durable: "kept", InactiveThreshold: time.Hour}); err != nil {
		t.Fatal(err)
	}
	dir := a.dir
	a.stop()
	dirConsumerIdle = 5 * time.Second
	a = startRelay(t, "relay-a", dir)
	st, err := a.node.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.StreamWarning, dirStream) {
		t.Fatalf("stream warning = %q; want it to say %s was used as it is", st.StreamWarning, dirStream)
	}
}
