package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// The mesh end to end, with real processes: a three-node JetStream cluster
// (nats-server built from the Go module this repository pins) and three
// relays on loopback, then faults. It runs when CROSSCHAT_E2E_MESH is set
// (make e2e-mesh, part of make test); CROSSCHAT_E2E_MESH_CUT sets how long
// relay A is cut off from NATS (default 60s).

var (
	natsOnce sync.Once
	natsBin  string
	natsErr  error
)

// natsServerBinary builds nats-server from the module pinned in go.mod.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	natsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crosschat-nats-")
		if err != nil {
			natsErr = err
			return
		}
		natsBin = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsErr = fmt.Errorf("go build nats-server: %w\n%s", err, out)
		}
	})
	if natsErr != nil {
		t.Fatal(natsErr)
	}
	return natsBin
}

// natsNode is one nats-server process of the cluster.
type natsNode struct {
	name        string
	port, route int
	dir         string
	routes      string
	cmd         *exec.Cmd
	done        chan struct{}
	out         *testkit.Buffer
}

func (n *natsNode) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

func (n *natsNode) start(t *testing.T) {
	t.Helper()
	n.out = &testkit.Buffer{}
	n.cmd = exec.Command(natsServerBinary(t), "-a", "127.0.0.1", "-p", strconv.Itoa(n.port), "--server_name", n.name,
		"--js", "--store_dir", n.dir, "--cluster_name", "crosschat", "--cluster", "nats://127.0.0.1:"+strconv.Itoa(n.route),
		"--routes", n.routes, "--no_advertise")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.name, err)
	}
	n.done = make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("NATS node %s (client port %d, route port %d) said:\n%s", n.name, n.port, n.route, n.out.String())
		}
	})
	waitPort(t, n.port, n.name)
}

// awaitJetStream waits until each node answers a JetStream request (its
// cluster has a meta leader), so that a cluster that does not form fails
// here, by name and with each node's log, not later as a relay that cannot
// join. It logs how long each took.
func awaitJetStream(t *testing.T, nodes []*natsNode) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for _, n := range nodes {
		nc, err := nats.Connect(n.url(), nats.Timeout(2*time.Second))
		if err != nil {
			t.Fatalf("connect to NATS node %s: %v", n.name, err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			t.Fatal(err)
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = js.AccountInfo(ctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				nc.Close()
				t.Fatalf("NATS node %s: no JetStream %s after the last node started: %v", n.name, time.Since(start).Round(time.Millisecond), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		nc.Close()
		t.Logf("NATS node %s answers for JetStream %s after the last node started", n.name, time.Since(start).Round(time.Millisecond))
	}
}

func (n *natsNode) stop(t *testing.T) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	n.cmd = nil
}

func waitPort(t *testing.T, port int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %d", what, port)
}
