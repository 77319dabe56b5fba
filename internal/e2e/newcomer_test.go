//go:build unix

package e2e_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// TestNewcomerPath walks a newcomer's first hour with the real binary, as
// the README gives it: `make install` into a prefix (said on screen, with a
// warning while that folder is not on PATH), the program run bare (it says
// to run serve), two folders registered, a send from a subfolder (the
// parent's project sends it), `monitor ID` from a third folder, a completion
// with its result coming back, `projects list` and `projects remove`, and
// the plugin's hook for every cause register explains.
func TestNewcomerPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the relay binary")
	}
	root := t.TempDir()
	home, prefix := filepath.Join(root, "home"), filepath.Join(root, "prefix")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}

	// make install, the binary already built (as build-headless would).
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mk := exec.Command("make", "--no-print-directory", "-o", "build-headless", "install", "HEADLESS="+relayBinary(t), "PREFIX="+prefix)
	mk.Dir = repo
	mk.Env = append(childEnv(), "HOME="+home, "PATH=/usr/local/bin:/usr/bin:/bin")
	made, err := mk.CombinedOutput()
	installed := filepath.Join(prefix, "bin", "crosschat-relay")
	if err != nil || !strings.Contains(string(made), "installed crosschat-relay") || !strings.Contains(string(made), installed) ||
		!strings.Contains(string(made), prefix+"/bin is not on your PATH") {
		t.Fatalf("make install: %v\n%s", err, made)
	}
	bin := filepath.Dir(installed)
	pathEnv := "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"
	mk = exec.Command("make", "--no-print-directory", "-o", "build-headless", "install", "HEADLESS="+relayBinary(t), "PREFIX="+prefix)
	mk.Dir, mk.Env = repo, append(childEnv(), "HOME="+home, pathEnv)
	if out, err := mk.CombinedOutput(); err != nil || strings.Contains(string(out), "warning") {
		t.Fatalf("make install with the folder on PATH: %v\n%s", err, out)
	}

	// Run bare, the headless build says what to run instead, and touches nothing.
	bare := exec.Command(installed)
	bare.Env = append(childEnv(), "HOME="+home, pathEnv, "XDG_DATA_HOME="+filepath.Join(home, "data"))
	msg, err := bare.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), "crosschat-relay serve") || strings.Contains(string(msg), "Wails applications") {
		t.Fatalf("the bare headless binary: %v\n%s", err, msg)
	}
	if _, err := os.Stat(filepath.Join(home, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the bare binary made a data folder: %v", err)
	}

	p, dataDir := childRelay(t)
	env := append(projectEnv(home, p.port, dataDir), pathEnv)
	// run runs the installed crosschat-relay, found on env's PATH, in dir.
	run := func(dir string, args ...string) (string, string, int) {
		t.Helper()
		cmd := onPath(args...)
		cmd.Env, cmd.Dir = env, dir
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if errors.As(err, &ee) {
			return o.String(), e.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("crosschat-relay %v: %v", args, err)
		}
		return o.String(), e.String(), 0
	}
	projects := filepath.Join(root, "src")
	api, web, elsewhere := filepath.Join(projects, "api"), filepath.Join(projects, "web"), filepath.Join(root, "elsewhere")
	deep := filepath.Join(api, "internal", "store")
	for _, d := range []string{deep, web, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{api, web} {
		if out, errs, code := run(d, "register"); code != 0 || out != filepath.Base(d)+"\n" {
			t.Fatalf("register in %s: exit %d, %q %q", d, code, out, errs)
		}
	}

	// A send from a subfolder is the parent project's.
	out, errs, code := run(deep, "send", "web", "Rebase on main, then run the tests.")
	if code != 0 || !taskIDLine.MatchString(out) {
		t.Fatalf("send from %s: exit %d, %q %q", deep, code, out, errs)
	}
	taskID := strings.TrimSpace(out)
	admin := adminToken(t, dataDir)
	c := bench.NewClient(p.url, 2)
	defer c.Close()
	var detail app.TaskDetail
	if err := c.Bridge(t.Context(), admin, "Tasks", "Get", &detail, taskID); err != nil || detail.Task.SenderSlug != "api" || detail.Task.RecipientSlug != "web" {
		t.Fatalf("the task sent from a subfolder: %+v %v", detail.Task, err)
	}

	// monitor ID from a third folder, in the message format.
	webMon := startMonitorIn(t, env, elsewhere, "web", "--format", "message")
	waitFor(t, "web's line on a monitor started elsewhere", func() bool { return len(webMon.snapshot()) >= 1 },
		func() string { return strings.Join(webMon.snapshot(), "\n") + "\n" + webMon.stderr.String() })
	line := parseMessageLine(t, webMon.snapshot()[0])
	if line.From != "api" || line.SourceProjectID != "api" || line.To != "web" || line.TaskID != taskID || line.Kind != "task" || line.Verification != "authenticated" {
		t.Fatalf("web's line: %+v", line)
	}
	apiMon := startMonitorIn(t, env, elsewhere, "api", "--format", "message")
	webToken := storedToken(t, home, "web")
	var claim claimAnswer
	if err := c.Tool(t.Context(), webToken, "claim_next_task", nil, &claim); err != nil || claim.Task == nil || claim.Task.ID != taskID {
		t.Fatalf("claim as web: %+v %v", claim, err)
	}
	if err := c.Tool(t.Context(), webToken, "report_task", map[string]any{"taskId": taskID, "kind": "completed", "message": "Rebased.", "result": "Rebased onto main; 212 tests pass."}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the completion on api's monitor", func() bool {
		for _, l := range apiMon.snapshot() {
			if m := parseMessageLine(t, l); m.Kind == relay.EventTaskCompleted {
				return m.Result == "Rebased onto main; 212 tests pass." && m.From == "web" && m.Hops != nil
			}
		}
		return false
	}, func() string { return strings.Join(apiMon.snapshot(), "\n") + "\n" + apiMon.stderr.String() })

	// projects list, then remove: the agent retired, its task kept.
	out, errs, code = run(elsewhere, "projects", "list")
	if code != 0 || !strings.Contains(out, "LAST SEEN") || !strings.Contains(out, api) || !strings.Contains(out, web) || !strings.Contains(out, "online") {
		t.Fatalf("projects list: exit %d, %q %q", code, out, errs)
	}
	t.Logf("projects list:\n%s", out)
	if out, errs, code = run(elsewhere, "projects", "remove", "web"); code != 0 || !strings.Contains(out, "retired") {
		t.Fatalf("projects remove web: exit %d, %q %q", code, out, errs)
	}
	var agents []relay.Agent
	if err := c.Bridge(t.Context(), admin, "Agents", "List", &agents); err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if a.Slug == "web" {
			t.Fatalf("agents list keeps the removed project: %+v", a)
		}
	}
	if err := c.Bridge(t.Context(), admin, "Tasks", "Get", &detail, taskID); err != nil || detail.Task.Status != relay.StatusCompleted {
		t.Fatalf("the removed project's task: %+v %v", detail.Task, err)
	}
	if out, _, _ = run(elsewhere, "projects", "list"); strings.Contains(out, web) {
		t.Fatalf("projects list after remove:\n%s", out)
	}

	hookCauses(t, home, p.port, dataDir, bin, api, deep)
}

// onPath is crosschat-relay with args as a shell finds it on the PATH of
// the command's own environment (exec.Command looks in the test's).
func onPath(args ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", `exec crosschat-relay "$@"`, "sh"}, args...)...)
}

// hookCauses runs the plugin's SessionStart hook script as Claude Code
// does, for each cause register explains, and for a session started in a
// subfolder of a registered project: one JSON line, exit 0, and the words
// register itself prints.
func hookCauses(t *testing.T, home string, port int, dataDir, bin, api, deep string) {
	t.Helper()
	script := filepath.Join(pluginDir(t), "crosschat", "hooks", "session-start.sh")
	noLetters := filepath.Join(t.TempDir(), "___")
	if err := os.Mkdir(noLetters, 0o755); err != nil {
		t.Fatal(err)
	}
	never := t.TempDir()
	free := testkit.FreePort(t)
	for _, tc := range []struct {
		name, dir, path string
		port            int
		data            string
		want            string
	}{
		{"crosschat-relay not on PATH", api, "/usr/bin:/bin", port, dataDir, "crosschat-relay is not installed (not found on PATH)"},
		{"no relay ever started", api, bin + ":/usr/bin:/bin", port, never, "api-token"},
		{"no relay at the address", api, bin + ":/usr/bin:/bin", free, dataDir, "no relay is running at http://127.0.0.1:" + strconv.Itoa(free)},
		{"a missing folder", filepath.Join(api, "gone"), bin + ":/usr/bin:/bin", port, dataDir, "there is no folder " + filepath.Join(api, "gone")},
		{"the root folder", "/", bin + ":/usr/bin:/bin", port, dataDir, "cannot be a project"},
		{"a name with no letter or digit", noLetters, bin + ":/usr/bin:/bin", port, dataDir, "no letter or digit"},
		{"a subfolder of a project", deep, bin + ":/usr/bin:/bin", port, dataDir, `this folder is the project "api"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(projectEnv(home, tc.port, tc.data), "PATH="+tc.path, "CLAUDE_PROJECT_DIR="+tc.dir)
			cmd := exec.Command("sh", script)
			cmd.Env, cmd.Dir = env, os.TempDir()
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the hook: %v", err)
			}
			var v struct{ SystemMessage string }
			if strings.Count(string(out), "\n") != 1 || json.Unmarshal(out, &v) != nil || !strings.Contains(v.SystemMessage, tc.want) {
				t.Fatalf("the hook printed %q; want one line with %q", out, tc.want)
			}
			if strings.Contains(v.SystemMessage, "could not complete this request") {
				t.Fatalf("the hook hides the cause: %q", v.SystemMessage)
			}
			if !strings.Contains(tc.path, bin) || strings.Contains(v.SystemMessage, "this folder is the project") {
				return
			}
			// The same words as register itself.
			reg := onPath("register", tc.dir)
			reg.Env, reg.Dir = env, os.TempDir()
			regOut, _ := reg.CombinedOutput()
			reason := strings.TrimSpace(strings.TrimPrefix(string(regOut), "crosschat-relay: "))
			if !strings.Contains(v.SystemMessage, "this session is not connected: "+reason) {
				t.Fatalf("the hook says %q;\nregister says %q", v.SystemMessage, reason)
			}
		})
	}
}
