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
	// A direct get answers with the stream's rights to the subject its
	// asker names: C's own entry, answered to a JetStream API subject, was
	// that call made by the server (B's consumer removed, a consumer of B's
	// inbox made, the stream deleted).
	h.publishRefused(t, "$JS.API.DIRECT.GET."+dirStream, nil, []byte(`{"last_by_subj":"`+key+`"}`))
	h.publishRefused(t, "$JS.API.DIRECT.GET."+dirStream+"."+key, nil, nil)
	// Its consumer delivers what its inbox holds to the reply of its pull:
	// nothing of C's own may be there.
	h.publishRefused(t, subject(c.node.id.ID), nil, []byte(`{"seq":1000000000}`))
	// The message API answers as the API does: an answer to a JetStream
	// API subject runs nothing.
	if err := h.nc.PublishRequest("$JS.API.STREAM.MSG.GET."+dirStream, "$JS.API.STREAM.DELETE."+StreamName, []byte(`{"last_by_subj":"`+key+`"}`)); err != nil {
		t.Fatal(err)
	}
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
	js := jetStreamClient(t, a.node.ClientURL())
	if _, err := js.Stream(t.Context(), StreamName); err != nil {
		t.Fatalf("the stream after C's message get answered to its deletion: %v", err)
	}
}

// Ensure an invited relay's own consumer of the stream is pulled, made by
// the relay that embeds NATS before the invitee is let in, and not the
// invitee's to change: made first as one that pushes, it delivered its own
// messages to any subject of the account, B's consumer's reset subject
// too. Its attempts are refused; one found pushing (made before) is made
// again pulled.
func TestNeighbourOwnConsumerStaysPulled(t *testing.T) {
	a, b, c := threeRelays(t, nil)
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	ccons := consumerName(c.node.id.ID)
	reset := "$JS.API.CONSUMER.RESET." + StreamName + "." + consumerName(b.node.id.ID)
	// Nor may C change it (an idle time of a second had it removed, to be
	// made again pushing).
	for _, cfg := range []string{`"deliver_subject":"` + reset + `"`, `"inactive_threshold":1000000000`} {
		h.publishRefused(t, "$JS.API.CONSUMER.CREATE."+StreamName+"."+ccons+"."+subject(c.node.id.ID), nil,
			[]byte(`{"stream_name":"`+StreamName+`","config":{"durable_name":"`+ccons+`","ack_policy":"explicit","filter_subject":"`+subject(c.node.id.ID)+`",`+cfg+`}}`))
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
