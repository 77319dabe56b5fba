package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// relayAddr is the loopback address of a relay on port.
func relayAddr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// monitorProc is a running `crosschat-relay monitor`.
type monitorProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stderr *testkit.Buffer
	done   chan struct{}
}

// startMonitor starts `monitor` with args in a fresh folder, with the
// children's environment.
func startMonitor(t *testing.T, args ...string) *monitorProc {
	t.Helper()
	return startMonitorIn(t, childEnv(), t.TempDir(), args...)
}

// startMonitorIn starts `monitor` with args in dir with env; it reads its
// stdout lines until it exits and kills it at the end of the test.
func startMonitorIn(t *testing.T, env []string, dir string, args ...string) *monitorProc {
	t.Helper()
	m := &monitorProc{stderr: &testkit.Buffer{}, done: make(chan struct{})}
	m.cmd = exec.Command(relayBinary(t), append([]string{"monitor"}, args...)...)
	m.cmd.Env, m.cmd.Dir, m.cmd.Stderr = env, dir, m.stderr
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
		m.cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		select {
		case <-m.done:
		default:
			m.cmd.Process.Kill()
			<-m.done
		}
	})
	return m
}

func (m *monitorProc) snapshot() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lines...)
}

// waitFor polls until cond holds or 30 s pass, showing dump on failure.
func waitFor(t *testing.T, what string, cond func() bool, dump func() string) {
	t.Helper()
	poll.Until(t, what, 30*time.Second, cond, dump)
}

// monitorEvent is one parsed stdout line.
type monitorEvent struct {
	Prefix   string
	TaskID   string `json:"taskId"`
	Title    string `json:"title"`
	Sender   string `json:"sender"`
	Priority int    `json:"priority"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	// ConversationID is the task's conversation (each task here starts its own).
	ConversationID string `json:"conversationId"`
}

func parseMonitorLine(t *testing.T, line string) monitorEvent {
	t.Helper()
	prefix, body, ok := strings.Cut(line, " ")
	if !ok || (prefix != "CROSSCHAT_TASK" && prefix != "CROSSCHAT_UPDATE") {
		t.Fatalf("monitor printed a line that is not an event: %q", line)
	}
	e := monitorEvent{Prefix: prefix}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("monitor line %q: %v", line, err)
	}
	return e
}

// TestMonitorExactlyOnce runs `monitor` as a process through a proxy that
// cuts its connection, then crashes (SIGKILL) and restarts the relay while
// events are posted, and checks stdout: every task and update exactly once,
// in order, nothing else.
func TestMonitorExactlyOnce(t *testing.T) {
	p, dataDir := childRelay(t)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	proxy := newTCPProxy(t, relayAddr(p.port))
	c := bench.NewClient(p.url, 4)
	defer func() { c.Close() }()
	ctx := t.Context()

	m := startMonitor(t, "--token", bob.token, "--url", "http://"+proxy.addr()+"/mcp")
	connected := func(n int) func() bool {
		return func() bool { return strings.Count(m.stderr.String(), "connected after") >= n }
	}
	dump := func() string {
		return fmt.Sprintf("stdout:\n%s\nstderr:\n%s", strings.Join(m.snapshot(), "\n"), m.stderr.String())
	}
	waitFor(t, "the monitor to connect", connected(1), dump)

	var want []string // "TASK id" or "UPDATE id kind", in order
	post := func(from, to testAgent, title string, prio int) string {
		t.Helper()
		var task relay.Task
		if err := c.Tool(ctx, from.token, "post_task", map[string]any{"recipientSlug": to.slug, "title": title, "instructions": "Do " + title + ".\nSecond line.", "priority": prio}, &task); err != nil {
			t.Fatalf("post_task: %v", err)
		}
		if to.slug == bob.slug {
			want = append(want, "TASK "+task.ID)
		}
		return task.ID
	}
	claim := func(who testAgent, id string) {
		t.Helper()
		var ans claimAnswer
		if err := c.Tool(ctx, who.token, "claim_next_task", map[string]any{}, &ans); err != nil || ans.Task == nil || ans.Task.ID != id {
			t.Fatalf("claim_next_task = %+v, %v; want %s", ans, err, id)
		}
		want = append(want, "UPDATE "+id+" "+relay.EventTaskClaimed)
	}
	report := func(who testAgent, id, kind, event string) {
		t.Helper()
		if err := c.Tool(ctx, who.token, "report_task", map[string]any{"taskId": id, "kind": kind, "message": kind + " on " + id}, nil); err != nil {
			t.Fatalf("report_task: %v", err)
		}
		want = append(want, "UPDATE "+id+" "+event)
	}
	waitLines := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d monitor lines", n), func() bool { return len(m.snapshot()) >= n }, dump)
	}

	// Connected: tasks for bob and updates on the task bob sent.
	post(alice, bob, "first", 3)
	t2 := post(bob, alice, "for alice", 2)
	claim(alice, t2)
	report(alice, t2, relay.ReportProgress, relay.EventTaskProgress)
	post(alice, bob, "second", 1)
	report(alice, t2, relay.ReportCompleted, relay.EventTaskCompleted)
	waitLines(len(want))

	// A dropped connection, with events posted while it is down.
	proxy.set(relayAddr(p.port), true)
	proxy.cut()
	post(alice, bob, "while cut", 2)
	t5 := post(bob, alice, "another for alice", 2)
	proxy.set(relayAddr(p.port), false)
	waitFor(t, "the monitor to reconnect", connected(2), dump)
	claim(alice, t5)
	waitLines(len(want))

	// A relay crash and restart, with events posted before the monitor is back.
	proxy.set(relayAddr(p.port), true)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 30*time.Second)
	proxy.cut()
	p = startProcess(t, dataDir)
	c.Close()
	c = bench.NewClient(p.url, 4)
	post(alice, bob, "after restart", 2)
	report(alice, t5, relay.ReportBlocked, relay.EventTaskBlocked)
	proxy.set(relayAddr(p.port), false)
	waitFor(t, "the monitor to reconnect to the restarted relay", connected(3), dump)
	post(alice, bob, "last", 2)
	waitLines(len(want))

	// Stop it the way a session does; it exits 0 with nothing more printed.
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("monitor did not stop on SIGTERM\n%s", dump())
	}
	if code := m.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("monitor exit code %d\n%s", code, dump())
	}

	var got []string
	for _, line := range m.snapshot() {
		e := parseMonitorLine(t, line)
		if e.TaskID == "" || e.Title == "" || e.Sender == "" || e.Message == "" || e.ConversationID != e.TaskID {
			t.Errorf("incomplete line %q", line)
		}
		if e.Prefix == "CROSSCHAT_TASK" {
			if e.Sender != alice.slug || e.Priority < 1 || !strings.HasPrefix(e.Message, "Do "+e.Title) {
				t.Errorf("task line %q: want sender alice, a priority and the instructions", line)
			}
			got = append(got, "TASK "+e.TaskID)
		} else {
			if e.Sender != alice.slug || e.Kind == "" {
				t.Errorf("update line %q: want sender alice and a kind", line)
			}
			got = append(got, "UPDATE "+e.TaskID+" "+e.Kind)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("monitor printed\n  %s\nwant\n  %s\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), dump())
	}
	if n := strings.Count(m.stderr.String(), "connected after"); n != 3 {
		t.Errorf("monitor connected %d times, want 3 (start, after the cut, after the restart)\n%s", n, dump())
	}
}
