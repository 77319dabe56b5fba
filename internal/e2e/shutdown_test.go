//go:build unix

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// TestSIGTERMDuringRunLeavesTaskQueued stops a real relay process with
// SIGTERM while its worker runs a real CLI that ignores SIGTERM, and while
// a slow HTTP client holds up draining for the whole shutdown timeout. The
// workers stop on their own deadline, so the task is back in the queue
// when the process has exited, not claimed until its lease runs out.
func TestSIGTERMDuringRunLeavesTaskQueued(t *testing.T) {
	p, dataDir := childRelay(t)
	admin := adminToken(t, dataDir)
	addAgent(t, p, dataDir, "sleeper")
	c := bench.NewClient(p.url, 2)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	work := t.TempDir()
	pidFile := filepath.Join(work, "cli.pid")
	script := filepath.Join(work, "agent.sh")
	body := fmt.Sprintf("#!/bin/sh\ntrap '' TERM\ncat >/dev/null\necho $$ > '%s'\nsleep 120\necho too late\n", pidFile)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the CLI must not outlive the test, whatever happened
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	cfg := relay.WorkerConfig{AgentSlug: "sleeper", Harness: "custom", Command: script, Workdir: work,
		AllowedSenders: []string{"operator"}, Enabled: true, TimeoutMinutes: 10}
	if err := c.Bridge(ctx, admin, "Workers", "Save", nil, cfg); err != nil {
		t.Fatalf("Workers.Save: %v", err)
	}
	var task relay.Task
	if err := c.Bridge(ctx, admin, "Tasks", "Post", &task, map[string]any{"recipientSlug": "sleeper", "title": "Sleep", "instructions": "Take your time."}); err != nil {
		t.Fatalf("Tasks.Post: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the CLI never started\n%s", p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A client that sends half a request body keeps its connection busy,
	// so HTTP draining uses up the whole shutdown timeout.
	slow, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.port))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := fmt.Fprintf(slow, "POST /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nhalf", p.port); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the server take the request in (no assertion depends on it)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t, 60*time.Second)

	db, err := store.Open(filepath.Join(dataDir, "relay.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != relay.StatusQueued {
		t.Fatalf("after SIGTERM mid-run the task is %s (lease until %v), want queued\n%s", got.Status, got.LeaseExpiresAt, p.out.String())
	}
}
