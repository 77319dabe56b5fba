//go:build unix

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// TestLogsTellRunsAcrossKill kills a real relay process with SIGKILL while
// its worker runs a task, starts it again on the same data folder and reads
// `crosschat-relay logs`: the first start's migrations are one line
// ("database migrated from 0 to N"), and after the second start the log
// says the run was interrupted (the task went back to the queue) and then
// that the task's second run completed, each with the task's id.
func TestLogsTellRunsAcrossKill(t *testing.T) {
	p, dataDir := childRelay(t)
	admin := adminToken(t, dataDir)
	addAgent(t, p, dataDir, "counter")
	work := t.TempDir()
	pidFile, marker := filepath.Join(work, "cli.pid"), filepath.Join(work, "ran-once")
	script := filepath.Join(work, "agent.sh")
	// The first run hangs (the relay is killed under it); the second answers.
	body := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\nif [ -e '%[1]s' ]; then echo 'Counted 3 boats.'; exit 0; fi\ntouch '%[1]s'\necho $$ > '%[2]s'\nsleep 120\n", marker, pidFile)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the first run's CLI must not outlive the test
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bridge := func(p *relayProc, svc, method string, out any, args ...any) {
		t.Helper()
		c := bench.NewClient(p.url, 2)
		defer c.Close()
		if err := c.Bridge(ctx, admin, svc, method, out, args...); err != nil {
			t.Fatalf("%s.%s: %v", svc, method, err)
		}
	}
	bridge(p, "Workers", "Save", nil, relay.WorkerConfig{AgentSlug: "counter", Harness: "custom", Command: script, Workdir: work,
		AllowedSenders: []string{"operator"}, Enabled: true, TimeoutMinutes: 10})
	var task relay.Task
	bridge(p, "Tasks", "Post", &task, map[string]any{"recipientSlug": "counter", "title": "Count the boats", "instructions": "How many boats?"})
	poll.Until(t, "the first run's CLI to start", 60*time.Second, func() bool {
		_, err := os.Stat(pidFile)
		return err == nil || p.exited()
	})

	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = p.wait(t, 30*time.Second)
	p = startProcess(t, dataDir)
	poll.Until(t, "the task's second run to complete", 60*time.Second, func() bool {
		db, err := store.Open(filepath.Join(dataDir, "relay.db"), store.Options{})
		if err != nil {
			return false
		}
		defer db.Close()
		got, err := db.Task(ctx, task.ID)
		return err == nil && got.Status == relay.StatusCompleted
	})

	// The log as a person reads it.
	var logs string
	poll.Until(t, "the completed run in the log", 30*time.Second, func() bool {
		logs = string(cli(t, "logs", "--data-dir", dataDir, "-n", "500"))
		return strings.Contains(logs, "worker run completed")
	})
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	index := func(what ...string) int {
		for i, l := range lines {
			found := true
			for _, w := range what {
				found = found && strings.Contains(l, w)
			}
			if found {
				return i
			}
		}
		return -1
	}
	var migrated []string
	for _, l := range lines {
		if strings.Contains(l, "database migrated") {
			migrated = append(migrated, l)
		}
	}
	want := fmt.Sprintf("database migrated from 0 to %d", store.SchemaVersion)
	if len(migrated) != 1 || !strings.Contains(migrated[0], want) {
		t.Errorf("the migrations logged %d lines, want one saying %q:\n%s", len(migrated), want, strings.Join(migrated, "\n"))
	}
	starts := 0
	for _, l := range lines {
		if strings.Contains(l, "relay started") {
			starts++
		}
	}
	// The second start's recovery settles the run the kill left.
	first := index("relay started")
	interrupted := index("worker run interrupted", "task="+task.ID, "agent=counter", "restarted")
	completed := index("worker run completed", "task="+task.ID, "agent=counter")
	if starts != 2 || interrupted < first || completed < interrupted {
		t.Fatalf("after the kill and restart the log lacks the interrupted run, then the completed one, of task %s (starts %d, lines %d and %d):\n%s",
			task.ID, starts, interrupted, completed, logs)
	}
	t.Logf("%s\n%s", lines[interrupted], lines[completed])
}
