//go:build unix

package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// projectEnv is the environment of the CLI in the project tests: no
// CROSSCHAT_* of the developer's, a private HOME and config folder (the
// project store lives there), and the relay at port with dataDir.
func projectEnv(home string, port int, dataDir string) []string {
	return append(childEnv(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"CROSSCHAT_PORT="+strconv.Itoa(port), "CROSSCHAT_DATA_DIR="+dataDir, "CLAUDE_CODE_SESSION_ID=")
}

// runIn runs the relay binary with args in dir and returns stdout, stderr
// and the exit code.
func runIn(t *testing.T, env []string, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(relayBinary(t), args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	}
	t.Fatalf("crosschat-relay %s: %v", strings.Join(args, " "), err)
	return "", "", -1
}

// crosschatMessage is one CROSSCHAT_MESSAGE line's JSON.
type crosschatMessage struct {
	From            string `json:"from"`
	SourceProjectID string `json:"source_project_id"`
	To              string `json:"to"`
	Text            string `json:"text"`
	TaskID          string `json:"taskId"`
	Kind            string `json:"kind"`
	Verification    string `json:"verification"`
	Result          string `json:"result"`
	ReplySession    string `json:"replySession"`
	ConversationID  string `json:"conversationId"`
	Hops            *int   `json:"hops"`
}

func parseMessageLine(t *testing.T, line string) crosschatMessage {
	t.Helper()
	body, ok := strings.CutPrefix(line, "CROSSCHAT_MESSAGE ")
	if !ok {
		t.Fatalf("monitor --format message printed %q", line)
	}
	var m crosschatMessage
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return m
}

var taskIDLine = regexp.MustCompile(`^[0-9a-f-]{36}\n$`)

// TestProjectSendMonitor uses the real binary: two project folders, each
// registered (`send` from a folder in no project is refused); a message sent
// from one folder is printed as exactly one CROSSCHAT_MESSAGE line by the
// monitor of the other, started there with no token; its completion comes
// back to the sender's monitor the same way; a send to an id nobody
// registered names the similar ones.
func TestProjectSendMonitor(t *testing.T) {
	p, dataDir := childRelay(t)
	home, root := t.TempDir(), t.TempDir()
	env := projectEnv(home, p.port, dataDir)
	api, web := filepath.Join(root, "api"), filepath.Join(root, "Web_App")
	for _, d := range []string{api, web} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, errs, code := runIn(t, env, web, "", "register"); code != 0 || out != "web-app\n" {
		t.Fatalf("register: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := runIn(t, env, api, "", "send", "web-app", "too early"); code != 1 || !strings.Contains(errs, "crosschat-relay register") {
		t.Fatalf("send from a folder in no project: exit %d, %q", code, errs)
	}
	if out, errs, code := runIn(t, env, api, "", "register"); code != 0 || out != "api\n" {
		t.Fatalf("register api: exit %d, %q %q", code, out, errs)
	}
	webMon := startMonitorIn(t, env, web, "--format", "message")
	dump := func(ms ...*monitorProc) func() string {
		return func() string {
			var b strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&b, "stdout:\n%s\nstderr:\n%s\n", strings.Join(m.snapshot(), "\n"), m.stderr.String())
			}
			return b.String()
		}
	}
	waitFor(t, "the web-app monitor to connect", func() bool { return strings.Contains(webMon.stderr.String(), "connected after") }, dump(webMon))

	// From api to web-app.
	const msg = "Rebase on main,\nthen run the tests."
	out, errs, code := runIn(t, env, api, "", "send", "web-app", msg, "--priority", "urgent")
	if code != 0 || !taskIDLine.MatchString(out) {
		t.Fatalf("send: exit %d, %q %q", code, out, errs)
	}
	taskID := strings.TrimSpace(out)
	waitFor(t, "the web-app monitor's line", func() bool { return len(webMon.snapshot()) >= 1 }, dump(webMon))
	got := parseMessageLine(t, webMon.snapshot()[0])
	if got.Hops == nil || *got.Hops != 0 {
		t.Fatalf("line %+v: hops %v, want 0", got, got.Hops)
	}
	got.Hops = nil
	if want := (crosschatMessage{From: "api", SourceProjectID: "api", To: "web-app", Text: msg, TaskID: taskID, Kind: "task", Verification: "authenticated", ConversationID: taskID}); got != want {
		t.Fatalf("line %+v, want %+v", got, want)
	}

	// The sender's monitor (started later: its cursor starts at its
	// registration) gets the completion of its task.
	apiMon := startMonitorIn(t, env, api, "--format", "message")
	waitFor(t, "the api monitor to connect", func() bool { return strings.Contains(apiMon.stderr.String(), "connected after") }, dump(apiMon))
	webToken := storedToken(t, home, "web-app")
	c := bench.NewClient(p.url, 2)
	defer c.Close()
	var claim claimAnswer
	if err := c.Tool(t.Context(), webToken, "claim_next_task", nil, &claim); err != nil || claim.Task == nil || claim.Task.ID != taskID {
		t.Fatalf("claim as web-app: %+v %v", claim, err)
	}
	if err := c.Tool(t.Context(), webToken, "report_task", map[string]any{"taskId": taskID, "kind": "completed", "message": "Rebased; tests pass.", "result": "Rebased onto main.\nAll 212 tests pass."}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the completion on the api monitor", func() bool {
		for _, l := range apiMon.snapshot() {
			if strings.Contains(l, `"kind":"task-completed"`) {
				return true
			}
		}
		return false
	}, dump(apiMon))
	for _, l := range apiMon.snapshot() {
		m := parseMessageLine(t, l)
		if m.From != "web-app" || m.SourceProjectID != "web-app" || m.To != "api" || m.TaskID != taskID || m.Kind == "task" || m.ConversationID != taskID {
			t.Errorf("api monitor line %+v", m)
		}
		if m.Kind == "task-completed" && m.Result != "Rebased onto main.\nAll 212 tests pass." {
			t.Errorf("the completion's line carries the result %q", m.Result)
		}
	}

	// A message on standard input.
	out, errs, code = runIn(t, env, api, "Second message\nfrom stdin\n", "send", "web-app", "-", "--title", "Stdin")
	if code != 0 || !taskIDLine.MatchString(out) {
		t.Fatalf("send -: exit %d, %q %q", code, out, errs)
	}
	waitFor(t, "the second line", func() bool { return len(webMon.snapshot()) >= 2 }, dump(webMon))
	if m := parseMessageLine(t, webMon.snapshot()[1]); m.Text != "Stdin\n\nSecond message\nfrom stdin" || m.TaskID != strings.TrimSpace(out) {
		t.Fatalf("second line %+v", m)
	}

	// Nobody registered "web-ap": refused with the similar ids.
	_, errs, code = runIn(t, env, api, "", "send", "web-ap", "hello")
	if code != 1 || !strings.Contains(errs, "nobody registered") || !strings.Contains(errs, "web-app") {
		t.Fatalf("send to an unknown id: exit %d, %q", code, errs)
	}
	_, errs, code = runIn(t, env, api, "", "send", "../web-app", "hello")
	if code != 2 || !strings.Contains(errs, "path separator") {
		t.Fatalf("send to a path: exit %d, %q", code, errs)
	}
	if lines := webMon.snapshot(); len(lines) != 2 {
		t.Fatalf("web-app's monitor printed %d lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// Nothing was written into the project folders.
	for _, d := range []string{api, web} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("%s holds %v", d, entries)
		}
	}
	sendFromSession(t, p.url, env, web, webToken)
}

// sendFromSession: `send` run inside a live session (CLAUDE_CODE_SESSION_ID,
// or --session, which wins) posts as that session, like its channel: the
// task's replySession is the session, and sent while the session holds a
// task it continues that task's conversation as its child. The web folder
// is the registered project web-app, whose queue holds a task.
func sendFromSession(t *testing.T, url string, env []string, web, webToken string) {
	t.Helper()
	var held claimAnswer
	if err := client.NewAgent(url, webToken, "w-1").Tool(t.Context(), "claim_next_task", nil, &held); err != nil || held.Task == nil {
		t.Fatalf("claim as the session w-1 of web-app: %+v %v", held, err)
	}
	plain := client.NewAgent(url, webToken, "")
	for _, tc := range []struct {
		name, session string
		args          []string
		parent        string
	}{
		{name: "inside the session holding a task", session: "w-1", args: []string{"send", "api", "Which schema version?"}, parent: held.Task.ID},
		{name: "--session names another", session: "w-2", args: []string{"send", "api", "Unrelated question", "--session", "w-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runIn(t, append(env, "CLAUDE_CODE_SESSION_ID=w-1"), web, "", tc.args...)
			if code != 0 || !taskIDLine.MatchString(out) {
				t.Fatalf("send: exit %d, %q %q", code, out, errs)
			}
			var task relay.Task
			if err := plain.Tool(t.Context(), "get_task", map[string]any{"taskId": strings.TrimSpace(out)}, &task); err != nil {
				t.Fatal(err)
			}
			if task.ReplySession != tc.session || task.ParentTaskID != tc.parent {
				t.Fatalf("the task has replySession %q, parent %q; want %q, %q", task.ReplySession, task.ParentTaskID, tc.session, tc.parent)
			}
			if tc.parent != "" && (task.ConversationID != held.Task.ConversationID || task.Hops != held.Task.Hops+1) {
				t.Errorf("the task is in conversation %s at hop %d; want %s at hop %d", task.ConversationID, task.Hops, held.Task.ConversationID, held.Task.Hops+1)
			}
		})
	}
}

// storedToken reads a project's token from the store in home.
func storedToken(t *testing.T, home, id string) string {
	t.Helper()
	path := filepath.Join(home, ".config", "crosschat-relay", "projects.json")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("project store %s: %v %v", path, st, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Projects []struct{ ID, Token string } }
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Projects {
		if p.ID == id {
			return p.Token
		}
	}
	t.Fatalf("no project %s in %s", id, b)
	return ""
}

// pluginDir is the Claude Code plugin's marketplace in the repository.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "build", "claude-plugin"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// The plugin's SessionStart hook script, run as Claude Code runs it: one
// line and exit 0 whether crosschat-relay is missing, no relay runs, or the
// folder registers (then the line carries the session's live link).
func TestPluginHookScript(t *testing.T) {
	p, dataDir := childRelay(t)
	script := filepath.Join(pluginDir(t), "crosschat", "hooks", "session-start.sh")
	home, proj := t.TempDir(), filepath.Join(t.TempDir(), "hooked")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Dir(relayBinary(t))
	hook := func(path string, port int) (string, int) {
		t.Helper()
		cmd := exec.Command("sh", script)
		cmd.Env = append(projectEnv(home, port, dataDir), "PATH="+path, "CLAUDE_PROJECT_DIR="+proj)
		cmd.Dir = proj
		out, err := cmd.Output()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	oneLine := func(out string) map[string]any {
		t.Helper()
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Fatalf("the hook printed %q, not one line", out)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("the hook's line %q: %v", out, err)
		}
		return v
	}
	out, code := hook("/usr/bin:/bin", p.port)
	if v := oneLine(out); code != 0 || !strings.Contains(fmt.Sprint(v["systemMessage"]), "not installed") {
		t.Fatalf("without crosschat-relay: exit %d, %q", code, out)
	}
	out, code = hook(binDir+":/usr/bin:/bin", testkit.FreePort(t))
	if v := oneLine(out); code != 0 || !strings.Contains(fmt.Sprint(v["systemMessage"]), "no relay is running") || v["hookSpecificOutput"] != nil {
		t.Fatalf("without a relay: exit %d, %q", code, out)
	}
	out, code = hook(binDir+":/usr/bin:/bin", p.port)
	v := oneLine(out)
	ctx, _ := v["hookSpecificOutput"].(map[string]any)
	if code != 0 || ctx["hookEventName"] != "SessionStart" || !strings.Contains(fmt.Sprint(ctx["additionalContext"]), "crosschat-relay monitor hooked --format message") ||
		!strings.Contains(fmt.Sprint(v["systemMessage"]), `the project "hooked"`) {
		t.Fatalf("with a relay: exit %d, %q", code, out)
	}
	storedToken(t, home, "hooked")
}

// TestClaudePlugin installs the plugin from the repository into the real
// Claude Code CLI (claude plugin marketplace add + claude plugin install)
// and starts sessions interactive in tmux, as a person would: a session in
// a new folder registers it (the relay has the folder's agent afterwards);
// a session started in a subfolder of it is that project, not a new one;
// and with the relay stopped a session still starts and shows the hook's
// one line. The relay's address (a port of its own, its data folder) is
// given the documented way: in the env of Claude Code's settings.json.
func TestClaudePlugin(t *testing.T) {
	claude, version := claudeInTmux(t)

	root := newRoot(t)
	home := filepath.Join(root, "home")
	first, second := filepath.Join(root, "Billing_API"), filepath.Join(root, "ledger")
	sub := filepath.Join(first, "cmd", "worker")
	for _, d := range []string{filepath.Join(home, ".claude"), first, second, sub} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := t.TempDir()
	p := startProcess(t, dataDir)
	const apiKey = "sk-ant-mock-plugin-test-0123456789abcdef"
	trusted := map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": []string{}}
	writeJSONFile(t, filepath.Join(home, ".claude.json"), map[string]any{
		"hasCompletedOnboarding": true,
		"lastOnboardingVersion":  version,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{apiKey[len(apiKey)-20:]}, "rejected": []string{}},
		"projects":               map[string]any{first: trusted, second: trusted, sub: trusted},
	})
	// The relay's address, as docs/live-sessions.md tells a user to give it.
	writeJSONFile(t, filepath.Join(home, ".claude", "settings.json"), map[string]any{
		"env": map[string]string{"CROSSCHAT_PORT": strconv.Itoa(p.port), "CROSSCHAT_DATA_DIR": dataDir},
	})
	env := []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		// crosschat-relay on PATH, as an installed one would be.
		"PATH=" + filepath.Dir(relayBinary(t)) + ":" + os.Getenv("PATH"),
		"TERM=xterm-256color", "LANG=C.UTF-8",
		// No model is asked anything; everything but loopback goes to a closed port.
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_API_KEY=" + apiKey, "DISABLE_AUTOUPDATER=1",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
	}
	// The checkout way the README and docs/live-sessions.md give second.
	for _, args := range [][]string{{"plugin", "marketplace", "add", pluginDir(t)}, {"plugin", "install", "crosschat@crosschat-relay"}} {
		cmd := exec.Command(claude, args...)
		cmd.Env, cmd.Dir = env, first
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	s := &tmuxSession{t: t, socket: fmt.Sprintf("crosschat-plugin-%d", os.Getpid())}
	var pids []int
	var pidsMu sync.Mutex
	start := func(name, folder string) {
		t.Helper()
		cmd := append([]string{"new-session", "-d", "-s", name, "-x", "220", "-y", "50", "-c", folder, "env", "-i"}, env...)
		if out, err := s.run(append(cmd, claude)...); err != nil {
			t.Fatalf("tmux: %v %s", err, out)
		}
		pidText, _ := s.run("display-message", "-p", "-t", name, "#{pane_pid}")
		if pid, _ := strconv.Atoi(strings.TrimSpace(pidText)); pid > 0 {
			pidsMu.Lock()
			pids = append(pids, pid)
			pidsMu.Unlock()
		}
	}
	// Runs before newRoot's cleanup: wait for the CLIs to be gone.
	t.Cleanup(func() {
		s.run("kill-server")
		for _, pid := range pids {
			for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
			}
		}
	})
	screen := func(name string) string {
		out, _ := s.run("capture-pane", "-p", "-J", "-t", name)
		return out
	}
	// Ready for input: 2.1.197 shows "? for shortcuts" under the prompt;
	// 2.1.332 shows its auto-mode line there instead, so the empty prompt
	// line ("❯") is the sign on both.
	ready := func(sc string) bool { return strings.Contains(sc, "for shortcuts") || emptyPrompt(sc) }

	// A session in a new folder registers it.
	start("first", first)
	admin := adminToken(t, dataDir)
	c := bench.NewClient(p.url, 1)
	defer c.Close()
	var agents []relay.Agent
	waitFor(t, "the session to register its folder", func() bool {
		agents = nil
		if err := c.Bridge(t.Context(), admin, "Agents", "List", &agents); err != nil {
			return false
		}
		for _, a := range agents {
			if a.Slug == "billing-api" && a.HasToken {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("screen:\n%s\nagents: %+v", screen("first"), agents) })
	waitFor(t, "the first session's hook line", func() bool {
		sc := screen("first")
		return ready(sc) && strings.Contains(sc, `this folder is the project "billing-api"`)
	}, func() string { return screen("first") })
	storedToken(t, home, "billing-api")

	// A session in a subfolder is the folder's project, not a new one.
	start("sub", sub)
	waitFor(t, "the subfolder session's hook line", func() bool {
		sc := screen("sub")
		return ready(sc) && strings.Contains(sc, `this folder is the project "billing-api"`)
	}, func() string { return screen("sub") })
	agents = nil
	if err := c.Bridge(t.Context(), admin, "Agents", "List", &agents); err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if a.Slug == "worker" || a.Slug == "cmd" {
			t.Fatalf("the subfolder session registered a project of its own: %+v", a)
		}
	}

	// With the relay stopped, a session still starts and shows why it is not connected.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Logf("relay exit: %v", err)
	}
	start("second", second)
	waitFor(t, "the second session to start with the hook's line", func() bool {
		sc := screen("second")
		return ready(sc) && strings.Contains(sc, "this session is not connected: no relay is running at")
	}, func() string { return screen("second") })
	t.Logf("the second session's screen:\n%s", strings.TrimRight(screen("second"), " \n"))
}
