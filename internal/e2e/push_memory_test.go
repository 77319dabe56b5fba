package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// pushStreamBudget is the most the relay process may grow (resident set)
// for pushStreams open push streams. Measured: see docs/live-sessions.md.
const (
	pushStreams      = 1000
	pushStreamBudget = 48 << 20
)

// rss reads a process's resident set size from /proc.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// TestPushStreamMemory opens 1,000 push streams on a relay process, checks
// how much its resident memory grew, and that one task posted then reaches
// every stream of its agent.
func TestPushStreamMemory(t *testing.T) {
	p, dataDir := childRelay(t)
	const agents = 10
	var as []testAgent
	for i := range agents {
		as = append(as, addAgent(t, p, dataDir, fmt.Sprintf("stream%d", i)))
	}
	sender := addAgent(t, p, dataDir, "sender")
	c := bench.NewClient(p.url, 2)
	defer c.Close()
	// Warm up the request path once so the baseline includes it.
	var task relay.Task
	if err := c.Tool(t.Context(), sender.token, "post_task", map[string]any{"recipientSlug": as[1].slug, "title": "warm-up", "instructions": "Nothing."}, &task); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the heap settle for the baseline; not an assertion
	before := rss(t, p.cmd.Process.Pid)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var ready, gotTask atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	for i := range pushStreams {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.port))
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		defer conn.Close()
		a := as[i%agents]
		fmt.Fprintf(conn, "GET /api/push HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", a.token)
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(conn)
			status, err := br.ReadString('\n')
			if err != nil || !strings.Contains(status, " 200 ") {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("stream status %q: %v", status, err))
				errMu.Unlock()
				return
			}
			for ctx.Err() == nil {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				switch strings.TrimSpace(line) {
				case "event: ready":
					ready.Add(1)
				case "event: task":
					gotTask.Add(1)
				}
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for ready.Load() < pushStreams && len(errs) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams ready", ready.Load(), pushStreams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	time.Sleep(200 * time.Millisecond) // as for the baseline
	after := rss(t, p.cmd.Process.Pid)
	grown := after - before
	t.Logf("relay RSS %.1f MiB idle, %.1f MiB with %d push streams: +%.1f MiB, %.1f KiB per stream",
		float64(before)/(1<<20), float64(after)/(1<<20), pushStreams, float64(grown)/(1<<20), float64(grown)/1024/pushStreams)
	if grown > pushStreamBudget {
		t.Errorf("%d push streams grew the relay by %d MiB, budget %d MiB", pushStreams, grown>>20, pushStreamBudget>>20)
	}

	// One task for stream0 wakes exactly its 100 streams.
	if err := c.Tool(t.Context(), sender.token, "post_task", map[string]any{"recipientSlug": as[0].slug, "title": "fan-out", "instructions": "Reach every stream."}, &task); err != nil {
		t.Fatal(err)
	}
	want := int64(pushStreams / agents)
	deadline = time.Now().Add(30 * time.Second)
	for gotTask.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams got the task", gotTask.Load(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a stray delivery to another agent's stream would show here
	if n := gotTask.Load(); n != want {
		t.Fatalf("%d streams got the task, want %d", n, want)
	}
	cancel()
}
