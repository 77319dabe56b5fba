//go:build unix

package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
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

// The fake agent CLI is this test binary run again: TestHelperProcess acts
// by the MODE:<word> marker in its prompt when CCR_WORKER_HELPER=1.
const helperEnv = "CCR_WORKER_HELPER"

var modePattern = regexp.MustCompile(`MODE:(\w+)`)

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	os.Exit(helperMain())
}

// relayEnv names the data folder of a relay that TestHelperRelay runs in a
// process of its own until it is killed: the relay that crashes mid-run in
// TestRestartRecovery.
const relayEnv = "CCR_WORKER_RELAY"

func TestHelperRelay(t *testing.T) {
	dir := os.Getenv(relayEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	os.Exit(relayMain(dir))
}

// relayMain runs a worker manager on the env of dir until the process is
// killed, and returns an exit code if it cannot start.
func relayMain(dir string) int {
	db, err := store.Open(filepath.Join(dir, "data", "relay.db"), store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m, err := worker.NewManager(envIn(dir, db).opts)
	if err == nil {
		err = m.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(5 * time.Minute) // the test kills the process long before
	return 0
}

// relayProcess starts a relay in a process of its own on the env's data
// folder (see TestHelperRelay); cleanup kills it if it still runs and shows
// its output when the test failed.
func (e *env) relayProcess() *exec.Cmd {
	e.t.Helper()
	logPath := filepath.Join(e.dir, "relay.log")
	log, err := os.Create(logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRelay$")
	cmd.Env = append(os.Environ(), relayEnv+"="+e.dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		e.t.Fatalf("start the relay process: %v", err)
	}
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		if e.t.Failed() {
			b, _ := os.ReadFile(logPath)
			e.t.Logf("relay process output:\n%s", b)
		}
	})
	return cmd
}

// helperMain behaves like an agent CLI and returns its exit code.
func helperMain() int {
	if os.Getenv("CCR_HELPER_MODE") == "grandchild" {
		signal.Ignore(syscall.SIGTERM) // only SIGKILL of the whole group ends it
		time.Sleep(2 * time.Minute)
		return 0
	}
	var prompt []byte
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	var resultFile string
	if len(args) > 0 {
		prompt, _ = os.ReadFile(args[0])
		if len(args) > 2 && args[1] == "--out" {
			resultFile = args[2]
		}
	} else {
		prompt, _ = io.ReadAll(os.Stdin)
	}
	mode := "done"
	if m := modePattern.FindSubmatch(prompt); m != nil {
		mode = string(m[1])
	}
	token := os.Getenv("CROSSCHAT_TOKEN")
	if f := os.Getenv("CCR_TOKEN_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(token), 0o600)
	}
	out := os.Stdout
	switch mode {
	case "done":
		cwd, _ := os.Getwd()
		kind := "missing"
		if strings.HasPrefix(token, relay.RunTokenPrefix) {
			kind = "run"
		}
		fmt.Fprintf(out, "Done by %s in %s\ntoken:%s\nprompt-has-title:%v\n",
			os.Getenv("CROSSCHAT_AGENT"), cwd, kind, strings.Contains(string(prompt), "## Task: "))
	case "block":
		fmt.Fprintln(out, "BLOCKED: I need the API key.")
	case "fail":
		fmt.Fprintln(os.Stderr, "harness crashed: out of memory")
		return 3
	case "empty":
		fmt.Fprintln(os.Stderr, "nothing to say")
	case "sleep":
		gc := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		gc.Env = append(os.Environ(), "CCR_HELPER_MODE=grandchild")
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if f := os.Getenv("CCR_PID_FILE"); f != "" {
			_ = os.WriteFile(f+".tmp", fmt.Appendf(nil, "%d %d", os.Getpid(), gc.Process.Pid), 0o600)
			_ = os.Rename(f+".tmp", f)
		}
		fmt.Fprintln(out, "working")
		time.Sleep(2 * time.Minute)
	case "write":
		_ = os.WriteFile("made-by-run.txt", []byte("made"), 0o644)
		for _, d := range filepath.SplitList(os.Getenv("CROSSCHAT_EXTRA_DIRS")) {
			_ = os.WriteFile(filepath.Join(d, "delivered.png"), []byte("png"), 0o644)
		}
		fmt.Fprintln(out, "Wrote the files.")
	case "chatty":
		fmt.Fprintln(out, "step one")
		fmt.Fprintln(os.Stderr, "warning: token "+token)
		fmt.Fprintln(out, "All done with "+token)
	case "encoded":
		// A run that read the admin token file and hands it back encoded,
		// and its own run token too, in its answer and its log.
		admin, _ := os.ReadFile(os.Getenv("CCR_ADMIN_FILE"))
		for _, sec := range []string{string(admin), token} {
			b := []byte(sec)
			fmt.Fprintln(out, "b64:"+base64.StdEncoding.EncodeToString(b))
			fmt.Fprintln(out, "b64url:"+base64.RawURLEncoding.EncodeToString(b))
			fmt.Fprintln(out, "b64mid:"+base64.StdEncoding.EncodeToString(append([]byte("key="), b...)))
			fmt.Fprintln(out, "hex:"+hex.EncodeToString(b))
			fmt.Fprintln(out, "HEX:"+strings.ToUpper(hex.EncodeToString(b)))
			fmt.Fprintln(out, "url:"+url.QueryEscape(sec))
			fmt.Fprintln(os.Stderr, "log b64:"+base64.StdEncoding.EncodeToString(b)+" hex:"+hex.EncodeToString(b))
		}
	case "env":
		env := os.Environ()
		sort.Strings(env)
		fmt.Fprintln(out, strings.Join(env, "\n"))
	case "file":
		fmt.Fprintln(out, "stdout noise")
		path := resultFile
		if path == "" {
			path = os.Getenv("CROSSCHAT_RESULT_FILE")
		}
		_ = os.WriteFile(path, []byte("Answer from the file."), 0o600)
	case "ran":
		_ = os.WriteFile(os.Getenv("CCR_RAN_FILE"), []byte("ran"), 0o600)
		fmt.Fprintln(out, "I ran.")
	case "sid":
		// The run's session: its own (a new session has no controlling
		// terminal), or the relay's.
		b, _ := os.ReadFile("/proc/self/stat")
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		fmt.Fprintf(out, "pid:%d sid:%s\n", os.Getpid(), f[3])
	case "link", "hardlink":
		// A run that makes its result file a link to a file of the user's
		// (~/.ssh/id_ed25519) for the relay to read for it.
		path := os.Getenv("CROSSCHAT_RESULT_FILE")
		_ = os.Remove(path)
		link := os.Symlink
		if mode == "hardlink" {
			link = os.Link
		}
		if err := link(os.Getenv("CCR_SECRET_FILE"), path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, "stdout noise")
	case "session", "sessiondie", "sessionmute", "sessionhang", "sessionhangearly", "sessionstuck", "sessionstuckearly":
		return sessionHelper(mode, prompt)
	case "remember":
		fmt.Fprintln(out, "session:sess-1")
		fmt.Fprintln(out, "Round done.")
	}
	return 0
}

// testHarness builds custom commands like internal/harness does, and records
// what it was asked.
type testHarness struct {
	mu       sync.Mutex
	requests []runspec.Request
	prompts  []runspec.PromptInput
}

func (h *testHarness) Build(req runspec.Request) (runspec.Spec, error) {
	h.mu.Lock()
	h.requests = append(h.requests, req)
	h.mu.Unlock()
	spec := runspec.Spec{Program: req.Config.Command, Events: runspec.EventsPlain}
	r := strings.NewReplacer("{prompt_file}", req.PromptFile, "{result_file}", req.ResultFile,
		"{mcp_config}", req.MCPConfigFile, "{mcp_url}", req.MCPURL, "{workdir}", req.Config.Workdir)
	for _, a := range req.Config.Args {
		if strings.Contains(a, "{result_file}") {
			spec.ResultFile = req.ResultFile
		}
		if strings.Contains(a, "{mcp_config}") {
			spec.RelayServer = runspec.RunServer
		}
		spec.Args = append(spec.Args, r.Replace(a))
	}
	if req.Config.PromptMode == relay.PromptStdin {
		spec.Stdin = req.Prompt
	}
	return spec, nil
}

func (h *testHarness) Parser(string) runspec.StreamParser { return &plainParser{} }

func (h *testHarness) Prompt(in runspec.PromptInput) string {
	h.mu.Lock()
	h.prompts = append(h.prompts, in)
	h.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s.\n\n## Task: %s\n\n%s\n", in.Agent.DisplayName, in.Task.Title, in.Task.Instructions)
	if in.RequestToken != "" {
		fmt.Fprintf(&b, "\nRequest token: %s\n", in.RequestToken)
	}
	for _, r := range in.Task.Reports {
		if r.Kind == relay.ReportChanges {
			fmt.Fprintf(&b, "\nChanges requested: %s\n", r.Message)
		}
	}
	return b.String()
}

func (h *testHarness) Name(id string) string {
	if id == relay.HarnessCustom {
		return "harness"
	}
	return id
}

func (h *testHarness) lastRequest(t *testing.T) (runspec.Request, runspec.PromptInput) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.requests) == 0 || len(h.prompts) == 0 {
		t.Fatal("the harness was never asked")
	}
	return h.requests[len(h.requests)-1], h.prompts[len(h.prompts)-1]
}

// plainParser makes each line an output step and remembers "session:<id>".
type plainParser struct{ session string }

func (p *plainParser) Line(line string) []relay.ActivityEntry {
	if s, ok := strings.CutPrefix(line, "session:"); ok {
		p.session = s
	}
	if strings.TrimSpace(line) == "" {
		return nil
	}
	return []relay.ActivityEntry{{Kind: relay.StepOutput, Text: line}}
}
func (p *plainParser) Answer() string    { return "" }
func (p *plainParser) SessionID() string { return p.session }

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

// pids reads the helper's "child grandchild" pid file once it exists.
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
