package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// TestBenchMesh runs the real `crosschat-relay bench --mesh` (two child
// relays in one mesh, NATS inside the first, a small load): every task
// crosses to the second relay and its updates come back, the wake-up
// crosses too, both relays' use is read, and their folder is removed.
func TestBenchMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the relay binary")
	}
	dir := t.TempDir()
	cmd := exec.Command(relayBinary(t), "bench", "--mesh", "--agents", "2", "--tasks", "12", "--wake-samples", "4", "--data-dir", dir, "--json")
	cmd.Env = childEnv()
	cmd.Dir = t.TempDir()
	var stderr testkit.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench --mesh: %v\n%s", err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, out)
	}
	l := rep.Lifecycle
	if l.Completed != 12 || l.EventsRead != 36 || l.Errors != 0 {
		t.Fatalf("lifecycle: %d completed, %d events read, %d errors; want 12, 36, 0", l.Completed, l.EventsRead, l.Errors)
	}
	if rep.Target.PeerURL == "" || rep.Target.PeerURL == rep.Target.URL {
		t.Fatalf("target = %+v; want two relays", rep.Target)
	}
	if rep.Relay == nil || rep.Peer == nil || rep.Relay.CPUPerLifecycleMs <= 0 || rep.Peer.CPUPerLifecycleMs <= 0 || rep.Peer.Batches == 0 {
		t.Fatalf("relay use: first %+v, peer %+v; want both read", rep.Relay, rep.Peer)
	}
	if rep.Wake == nil || rep.Wake.Samples != 4 || len(rep.Queues) != 0 || rep.Waiters != nil {
		t.Fatalf("wake %+v, queues %+v, waiters %+v; want 4 wake-ups and nothing of one relay alone", rep.Wake, rep.Queues, rep.Waiters)
	}
	if !strings.Contains(stderr.String(), "waiting for each relay to list the other's") {
		t.Errorf("progress does not say the relays met:\n%s", stderr.String())
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Fatalf("the data folder holds %v, %v; want the relays' folders removed", left, err)
	}

	// Rounds: each pair's report, then the medians.
	text := cli(t, "bench", "--mesh", "--rounds", "2", "--agents", "2", "--tasks", "6", "--wake-samples", "0", "--data-dir", dir)
	for _, s := range []string{"=== round 2 ===", "a mesh of the relays at", "peer relay:", "Medians of 2 rounds across the mesh", "lifecycles/s:"} {
		if !strings.Contains(string(text), s) {
			t.Errorf("the text lacks %q:\n%s", s, text)
		}
	}
}

// TestBenchPeerURL runs the real `crosschat-relay bench --url A --peer-url
// B` against two relays already in one mesh (as on two computers): the
// bench's agents on A post to its agents on B, and their updates come back.
func TestBenchPeerURL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the relay binary")
	}
	embed := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	ra := &meshProc{name: "relay-a", dir: t.TempDir(), port: testkit.FreePort(t),
		meshArgs: []string{"--nats-embed", embed, "--nats-name", "relay-a", "--mesh-trust", "account"}}
	ra.start(t)
	var inv struct{ URL string }
	if err := json.Unmarshal(cli(t, append([]string{"mesh", "invite", "--json"}, ra.loc()...)...), &inv); err != nil {
		t.Fatal(err)
	}
	rb := &meshProc{name: "relay-b", dir: t.TempDir(), port: testkit.FreePort(t),
		meshArgs: []string{"--nats", inv.URL, "--nats-name", "relay-b", "--mesh-trust", "account"}}
	rb.start(t)
	out := cli(t, "bench", "--url", "http://127.0.0.1:"+strconv.Itoa(ra.port), "--token", adminToken(t, ra.dir),
		"--peer-url", "http://127.0.0.1:"+strconv.Itoa(rb.port), "--peer-token", adminToken(t, rb.dir),
		"--agents", "2", "--tasks", "8", "--wake-samples", "2", "--queue-sizes", "", "--json")
	var rep bench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, out)
	}
	if l := rep.Lifecycle; l.Completed != 8 || l.EventsRead != 24 || l.Errors != 0 || rep.Target.PeerURL == "" || rep.Wake == nil || rep.Wake.Samples != 2 {
		t.Fatalf("report: lifecycle %+v, target %+v, wake %+v", l, rep.Target, rep.Wake)
	}
}
