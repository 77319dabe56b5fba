//go:build unix

package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/watch"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// env is a real store, a worker config for agent "builder" running the
// helper, and a manager.
type env struct {
	t        *testing.T
	ctx      context.Context
	db       *store.DB
	dir      string // the test's folder: data/relay.db, data/runs, work, extra
	cfg      relay.WorkerConfig
	opts     worker.Options
	harness  *testHarness
	mgr      *worker.Manager
	workdir  string
	extra    string
	pidFile  string
	tokFile  string
	statusMu sync.Mutex
	statuses []relay.WorkerStatus
}

const (
	builder  = "builder"
	operator = "operator"
	stranger = "stranger"
)

func newEnv(t *testing.T, mutate func(*relay.WorkerConfig, *worker.Options)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "data", "relay.db"), store.Options{})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	for _, slug := range []string{builder, stranger} {
		if _, _, err := db.CreateAgent(ctx, relay.CreateAgentInput{Slug: slug, DisplayName: "Agent " + slug,
			ModelSlug: "m", Capabilities: []string{"text-input", "text-output"}}); err != nil {
			t.Fatalf("CreateAgent: %v", err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := envIn(dir, db)
	e.t, e.ctx = t, ctx
	for _, d := range []string{e.workdir, e.extra} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.cfg = relay.WorkerConfig{
		AgentSlug: builder, Harness: relay.HarnessCustom, Command: exe,
		Args: []string{"-test.run=^TestHelperProcess$", "--"}, PromptMode: relay.PromptStdin,
		Workdir: e.workdir, ExtraDirs: []string{e.extra}, AllowedSenders: []string{operator},
		TimeoutMinutes: 1, RunsPerHour: 20, Enabled: true,
		Env: []string{helperEnv, "CCR_PID_FILE", "CCR_TOKEN_FILE", "MY_NAMED"},
	}
	if mutate != nil {
		mutate(&e.cfg, &e.opts)
	}
	if _, err := db.SaveWorker(ctx, e.cfg); err != nil {
		t.Fatalf("SaveWorker: %v", err)
	}
	return e
}

// envIn is the env of the data folder dir with its default options, without
// a test (a relay process of its own uses it too, see TestHelperRelay).
func envIn(dir string, db *store.DB) *env {
	e := &env{ctx: context.Background(), db: db, dir: dir, harness: &testHarness{},
		workdir: filepath.Join(dir, "work"), extra: filepath.Join(dir, "extra"),
		pidFile: filepath.Join(dir, "pids"), tokFile: filepath.Join(dir, "token")}
	e.opts = worker.Options{
		Relay: db, Harness: e.harness, Tracker: watch.Tracker{}, RunRoot: filepath.Join(dir, "data", "runs"),
		MCPURL: "http://127.0.0.1:4318/mcp",
		Env: func() []string {
			return append(os.Environ(), helperEnv+"=1", "CCR_PID_FILE="+e.pidFile, "CCR_TOKEN_FILE="+e.tokFile,
				"MY_NAMED=passed", "AWS_SECRET_ACCESS_KEY=s3cr3t", "SSH_AUTH_SOCK=/tmp/agent.sock",
				"HTTPS_PROXY=http://user:pw@proxy.invalid:8080", "ANTHROPIC_API_KEY=sk-ant-x")
		},
		OnStatus: func(s relay.WorkerStatus) {
			e.statusMu.Lock()
			e.statuses = append(e.statuses, s)
			e.statusMu.Unlock()
		},
		RenewEvery: 300 * time.Millisecond, CancelCheckEvery: 300 * time.Millisecond,
		KillGrace: 300 * time.Millisecond, Poll: time.Second, ErrorBackoff: 200 * time.Millisecond,
		FlushEvery: 50 * time.Millisecond,
	}
	return e
}

// start starts a manager on the env's options, stopped at cleanup.
func (e *env) start() *worker.Manager {
	e.t.Helper()
	m, err := worker.NewManager(e.opts)
	if err != nil {
		e.t.Fatalf("NewManager: %v", err)
	}
	if err := m.Start(e.ctx); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Stop(ctx); err != nil {
			e.t.Errorf("Stop: %v", err)
		}
	})
	e.mgr = m
	return m
}

func (e *env) post(from, title, mode string) relay.Task {
	e.t.Helper()
	task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: builder,
		Title: title, Instructions: "Please do it. MODE:" + mode})
	if err != nil {
		e.t.Fatalf("PostTask: %v", err)
	}
	return task
}

// waitFor polls cond until it holds or d passes (poll.Until).
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	poll.Until(t, what, d, cond)
}

// holds checks that cond stays true for d.
func holds(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			t.Fatalf("%s stopped holding", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) task(id string) relay.Task {
	e.t.Helper()
	task, err := e.db.Task(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Task: %v", err)
	}
	return task
}

// finished waits until the task leaves queued/claimed and the worker is
// no longer running it.
func (e *env) finished(id string) relay.Task {
	e.t.Helper()
	var task relay.Task
	poll.Until(e.t, "the task to finish", 30*time.Second, func() bool {
		task = e.task(id)
		if task.Status == relay.StatusQueued || task.Status == relay.StatusClaimed {
			return false
		}
		s := e.status()
		return s.CurrentTask == nil && s.LastRun != nil && s.LastRun.TaskID == id
	})
	return task
}

func (e *env) status() relay.WorkerStatus {
	e.t.Helper()
	s, ok := e.mgr.Status(builder)
	if !ok {
		e.t.Fatal("no status for builder")
	}
	return s
}

func (e *env) activity(id string) []relay.ActivityEntry {
	e.t.Helper()
	a, err := e.db.Activity(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Activity: %v", err)
	}
	return a
}

// runToEnd posts a task whose run follows mode, waits for it to finish and
// returns the finished task and its last report.
func (e *env) runToEnd(from, title, mode string) (relay.Task, relay.Report) {
	e.t.Helper()
	got := e.finished(e.post(from, title, mode).ID)
	return got, lastReport(got)
}

func lastReport(task relay.Task) relay.Report {
	if len(task.Reports) == 0 {
		return relay.Report{}
	}
	return task.Reports[len(task.Reports)-1]
}

// pids reads the helper's "child grandchild" pid file once it exists, and
// removes it.
func (e *env) pids() (child, grandchild int) {
	e.t.Helper()
	poll.Until(e.t, "the helper's pid file", 30*time.Second, func() bool {
		_, err := os.Stat(e.pidFile)
		return err == nil
	})
	b, err := os.ReadFile(e.pidFile)
	if err != nil {
		e.t.Fatal(err)
	}
	// Taken away once read, so a later call waits for the next run's file,
	// not this run's left behind.
	if err := os.Remove(e.pidFile); err != nil {
		e.t.Fatal(err)
	}
	f := strings.Fields(string(b))
	child, _ = strconv.Atoi(f[0])
	grandchild, _ = strconv.Atoi(f[1])
	return child, grandchild
}

// alive reports whether pid runs; a zombie (dead, not yet reaped by an init
// that may never reap it) counts as gone.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if _, statErr := os.Stat("/proc/self"); statErr != nil {
			return syscall.Kill(pid, 0) == nil // no /proc (macOS)
		}
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		poll.Until(t, fmt.Sprintf("pid %d to end", pid), 15*time.Second, func() bool { return !alive(pid) })
	}
}

func contains(entries []relay.ActivityEntry, text string) bool {
	for _, e := range entries {
		if strings.Contains(e.Text, text) || strings.Contains(e.Detail, text) {
			return true
		}
	}
	return false
}

// fakeSandbox stands in for the sandbox (Options.Sandbox): it confines
// nothing, says the run is confined, and keeps every request it was given.
type fakeSandbox struct {
	mu   sync.Mutex
	reqs []runspec.SandboxRequest
}

func (f *fakeSandbox) wrap(req runspec.SandboxRequest) (runspec.Sandboxed, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return runspec.Sandboxed{Program: req.Program, Args: req.Args, Confined: true, Log: "confined for the test"}, nil
}

// requests returns the requests so far.
func (f *fakeSandbox) requests() []runspec.SandboxRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}
