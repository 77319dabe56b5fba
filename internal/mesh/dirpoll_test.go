package mesh

import (
	"fmt"
	"testing"
)

// Ensure the directory is read whole, past the 1024 entries a batch of
// direct gets returned, and a read from a revision on returns only what was
// written since.
func TestDirectoryReadWhole(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	js := jetStreamClient(t, a.node.ClientURL())
	kv, err := js.KeyValue(t.Context(), BucketName)
	if err != nil {
		t.Fatal(err)
	}
	const relays, agents = 2, 600
	var last uint64
	for r := range relays {
		id := fmt.Sprintf("%016x", r+1)
		if _, err := kv.Put(t.Context(), relayKey(id), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		for i := range agents {
			if last, err = kv.Put(t.Context(), agentKey(id, fmt.Sprint("a", i)), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := a.node.readDirectory(t.Context(), ">", 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, e := range all {
		keys[e.key] = true
	}
	for r := range relays {
		id := fmt.Sprintf("%016x", r+1)
		if !keys[relayKey(id)] || !keys[agentKey(id, "a0")] || !keys[agentKey(id, fmt.Sprint("a", agents-1))] {
			t.Fatalf("relay %s's entries missing from a read of %d", id, len(all))
		}
	}
	if len(all) < relays*(agents+1) {
		t.Fatalf("read %d entries; want at least %d", len(all), relays*(agents+1))
	}
	since, err := a.node.readDirectory(t.Context(), ">", last)
	if err != nil || len(since) != 1 || since[0].rev != last {
		t.Fatalf("a read from revision %d = %d entries, %v; want the last one written", last, len(since), err)
	}
}
