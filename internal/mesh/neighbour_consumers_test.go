package mesh

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Ensure consumers a relay makes on the directory's stream do not outlive
// their use: relays may make them (watching the directory takes one), but
// one left idle, a durable one included, is removed by the server within
// a bound (two minutes; five seconds here), and a longer idle time is
// refused.
// Before, an invited relay made thousands of durable consumers there (2000
// in under a second, 29 MiB of the embedding relay's memory) that stayed,
// across restarts, until someone deleted them by hand.
func TestNeighbourConsumersOnTheDirectoryDoNotStay(t *testing.T) {
	old := dirConsumerIdle
	dirConsumerIdle = 5 * time.Second
	t.Cleanup(func() { dirConsumerIdle = old })
	a, _, c := threeRelays(t, nil)
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	const made = 20
	for i := range made {
		name := fmt.Sprintf("junk-%d", i)
		m := h.request(t, "$JS.API.CONSUMER.CREATE."+dirStream+"."+name, nil,
			[]byte(`{"stream_name":"`+dirStream+`","config":{"durable_name":"`+name+`","ack_policy":"explicit"}}`))
		if strings.Contains(string(m.Data), `"error"`) {
			t.Fatalf("a durable consumer of the directory = %s", m.Data)
		}
	}
	m := h.request(t, "$JS.API.CONSUMER.CREATE."+dirStream+".forever", nil,
		[]byte(`{"stream_name":"`+dirStream+`","config":{"durable_name":"forever","ack_policy":"explicit","inactive_threshold":3600000000000}}`))
	if !strings.Contains(string(m.Data), `"error"`) {
		t.Fatalf("a consumer of the directory idle for an hour was made: %s", m.Data)
	}
	js := jetStreamClient(t, a.node.ClientURL())
	s, err := js.Stream(t.Context(), dirStream)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the idle consumers go", func() (bool, string) {
		left := 0
		names := s.ConsumerNames(t.Context())
		for n := range names.Name() {
			if strings.HasPrefix(n, "junk-") {
				left++
			}
		}
		return left == 0 && names.Err() == nil, fmt.Sprintf("%d of %d left (%v)", left, made, names.Err())
	})
	// The relays' own watches go on: a new agent still reaches A.
	createAgent(t, c, "carol")
	knows(t, a, "carol", "relay-c")
}

// Ensure a relay whose watch of the directory another relay removed (the
// one removal a relay may make; here C is given the watch's name, which no
// relay can list) sees the directory's next changes all the same: its
// watcher makes the watch again.
func TestNeighbourRemovesAWatchOfTheDirectory(t *testing.T) {
	a, b, c := threeRelays(t, nil)
	h := connectAs(t, a.node.ClientURL(), c.node.id)
	js := jetStreamClient(t, a.node.ClientURL())
	s, err := js.Stream(t.Context(), dirStream)
	if err != nil {
		t.Fatal(err)
	}
	var watches []string
	infos := s.ListConsumers(t.Context())
	for ci := range infos.Info() {
		if strings.HasPrefix(ci.Config.DeliverSubject, inboxPrefix(b.node.id.ID)+".") {
			watches = append(watches, ci.Name)
		}
	}
	if infos.Err() != nil || len(watches) == 0 {
		t.Fatalf("B's watches of the directory: %v (%v)", watches, infos.Err())
	}
	for _, w := range watches {
		m := h.request(t, "$JS.API.CONSUMER.DELETE."+dirStream+"."+w, nil, nil)
		if !strings.Contains(string(m.Data), `"success":true`) {
			t.Fatalf("C removing B's watch %s = %s", w, m.Data)
		}
	}
	removed := time.Now()
	createAgent(t, a, "after")
	knows(t, b, "after", "relay-a")
	t.Logf("B saw the change %s after its watch was removed", time.Since(removed).Round(time.Second))
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
