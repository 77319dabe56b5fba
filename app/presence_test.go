package app_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure `status` says running (exit 0) with pid, address and counts for a
// live relay, and not running (exit 3) for an empty or stale data folder.
func TestStatusVerb(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	empty := t.TempDir()
	if out, _, code := run(t, "status", "--data-dir", empty); code != 3 || !strings.Contains(out, "not running") {
		t.Fatalf("empty data folder: %d %q", code, out)
	}
	r := startRelay(t)
	dir := r.Config().DataDir
	out, errs, code := run(t, "status", "--data-dir", dir, "--json")
	var st cli.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("running: %d %s %s", code, out, errs)
	}
	if !st.Running || st.PID != os.Getpid() || st.Version != "test" || st.Stats == nil || st.Stats.Agents.Total != 1 ||
		st.URL != r.Config().BaseURL() || st.DataDir != dir {
		t.Fatalf("status %+v", st)
	}
	if out, _, code = run(t, "status", "--data-dir", dir); code != 0 || !strings.Contains(out, "is running") || !strings.Contains(out, "PID") {
		t.Fatalf("text status: %d %q", code, out)
	}
	// A run file left by a relay that died: not running, and says so.
	stale := t.TempDir()
	b, _ := json.Marshal(app.RunInfo{PID: 999999, URL: "http://127.0.0.1:1", DataDir: stale})
	noErr(t, os.WriteFile(filepath.Join(stale, app.RunFileName), b, 0o600))
	if out, _, code = run(t, "status", "--data-dir", stale); code != 3 || !strings.Contains(out, "stale") {
		t.Fatalf("stale: %d %q", code, out)
	}
}

// Ensure `serve` writes its log file in the data folder and `logs` prints
// its last lines; the run file goes away on a clean stop.
func TestServeLogsAndRunFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	port := testkit.FreePort(t)
	done := make(chan int, 1)
	var out, errb testkit.Buffer
	go func() {
		done <- app.Serve([]string{"--port", strconv.Itoa(port), "--data-dir", dir}, nil, "test", &out, &errb)
	}()
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, app.RunFileName)); return err == nil }, "run file")
	// The run file can come a moment before the start line is written.
	waitFor(t, func() bool {
		o, _, code := run(t, "logs", "--data-dir", dir, "-n", "1")
		return code == 0 && strings.Contains(o, "relay started")
	}, "`logs -n 1` printing the start line")
	if _, errs, code := run(t, "quit", "--data-dir", dir, "--port", strconv.Itoa(port)); code != 0 {
		t.Fatalf("quit: %s", errs)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if _, err := os.Stat(filepath.Join(dir, app.RunFileName)); !os.IsNotExist(err) {
		t.Fatalf("run file left after a clean stop: %v", err)
	}
	// Quit again: nothing to stop, said as such (not a hint to start one).
	if _, errs, code := run(t, "quit", "--data-dir", dir, "--port", strconv.Itoa(port)); code != 1 ||
		!strings.Contains(errs, "so there is nothing to stop") || strings.Contains(errs, "start it") {
		t.Fatalf("a second quit: exit %d, %q", code, errs)
	}
	o, _, code := run(t, "logs", "--data-dir", dir, "-n", "2")
	if code != 0 || !strings.Contains(o, "shutting down") || strings.Count(o, "\n") != 2 {
		t.Fatalf("logs -n 2 after stop: %d %q", code, o)
	}
}

// Ensure `logs` on a data folder no relay has started on says so, naming
// the file it looked for, rather than a bare "no such file".
func TestLogsBeforeFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	o, errs, code := run(t, "logs", "--data-dir", dir)
	want := "no log yet: " + filepath.Join(dir, "crosschat-relay.log") + " is written once the relay starts on the data folder " + dir
	if code != 1 || o != "" || !strings.Contains(errs, want) || strings.Contains(errs, "no such file") {
		t.Fatalf("logs before a first start: exit %d %q\n%s\nwant: %s", code, o, errs, want)
	}
	// A file named by hand is only that file.
	missing := filepath.Join(dir, "elsewhere.log")
	o, errs, code = run(t, "logs", "--data-dir", dir, "--log-file", missing)
	if want := "logs: there is no file " + missing + " (--log-file)"; code != 1 || o != "" || !strings.Contains(errs, want) {
		t.Fatalf("logs --log-file of a missing file: exit %d %q\n%s\nwant: %s", code, o, errs, want)
	}
}

// Ensure `service install --write-only` writes a systemd user unit that
// restarts on failure, runs `serve` with this command's location, and that
// systemd-analyze accepts; uninstall removes it.
func TestServiceVerb(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	dir := filepath.Join(t.TempDir(), "data dir")
	out, errs, code := run(t, "service", "install", "--write-only", "--port", "4999", "--data-dir", dir, "--json")
	var res struct {
		Installed bool
		Path      string
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Installed {
		t.Fatalf("install: %d %s %s", code, out, errs)
	}
	if want := filepath.Join(cfgHome, "systemd", "user", "crosschat-relay.service"); res.Path != want {
		t.Fatalf("unit at %s, want %s", res.Path, want)
	}
	unit, err := os.ReadFile(res.Path)
	noErr(t, err)
	for _, want := range []string{"Restart=on-failure", " serve --host 127.0.0.1 --port 4999 --data-dir \"" + dir + "\"", "WantedBy=default.target"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	verifyUnit(t, res.Path)
	if out, _, code := run(t, "service", "status"); code != 0 || !strings.Contains(out, "is installed") {
		t.Fatalf("status: %d %q", code, out)
	}
	if _, errs, code := run(t, "service", "uninstall", "--write-only"); code != 0 {
		t.Fatalf("uninstall: %s", errs)
	}
	if _, err := os.Stat(res.Path); !os.IsNotExist(err) {
		t.Fatalf("unit still there: %v", err)
	}
	if _, errs, code := run(t, "service", "frobnicate"); code != 2 || !strings.Contains(errs, "install, uninstall or status") {
		t.Fatalf("bad action: %d %s", code, errs)
	}
}

// verifyUnit runs systemd-analyze verify on the unit. CI installs systemd
// (.ci/run), so there a missing tool is a failure, not a skip.
func verifyUnit(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is missing; .ci/run installs the systemd package")
		}
		t.Skip("systemd-analyze not installed")
	}
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// verify prints problems it does not fail on; none may concern our unit.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "crosschat-relay.service") {
			t.Errorf("systemd-analyze: %s", l)
		}
	}
}

// upstreamFixture is the upstream relay's data folder (internal/store/testdata/upstream).
const upstreamFixture = "../internal/store/testdata/upstream/relay.db"

// Ensure a data folder holding the upstream relay.db is refused by `serve`
// with the import hint, imported by `import-upstream`, and that an imported
// agent's upstream token is refused on /mcp (an import brings no
// credential) while the new token the operator issues it works; a second
// import changes nothing.
func TestImportUpstreamVerb(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	noErr(t, os.MkdirAll(dir, 0o700))
	b, err := os.ReadFile(upstreamFixture)
	noErr(t, err)
	noErr(t, os.WriteFile(filepath.Join(dir, "relay.db"), b, 0o600))

	var out, errb testkit.Buffer
	if code := app.Serve([]string{"--port", strconv.Itoa(testkit.FreePort(t)), "--data-dir", dir, "--log-file", "none"}, nil, "test", &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "import-upstream") || strings.Contains(errb.String(), "upgrade") {
		t.Fatalf("serve on an upstream folder: %d %s", code, errb.String())
	}

	o, errs, code := run(t, "import-upstream", "--data-dir", dir, "--json")
	var res struct {
		AlreadyImported bool
		Counts          map[string]int
		Kept            string
		RevokedTokens   []string
	}
	if code != 0 || json.Unmarshal([]byte(o), &res) != nil || res.AlreadyImported || res.Counts["tasks"] != 14 || res.Counts["agents"] != 6 ||
		!slices.Contains(res.RevokedTokens, "builder-codex") {
		t.Fatalf("import: %d %s %s", code, o, errs)
	}
	kept, err := os.ReadFile(res.Kept)
	noErr(t, err)
	if string(kept) != string(b) {
		t.Fatal("the kept upstream file differs from the original")
	}
	if o, _, code := run(t, "import-upstream", "--data-dir", dir); code != 0 || !strings.Contains(o, "nothing changed") {
		t.Fatalf("second import: %d %q", code, o)
	}

	r := apptest.Start(t, apptest.Config(dir), app.StartOptions{Version: "test"})
	if _, errs, code := run(t, "import-upstream", "--data-dir", dir); code != 1 || !strings.Contains(errs, "running") {
		t.Fatalf("import while running: %d %q", code, errs)
	}
	mcpURL := "http://" + r.Addr().String() + "/mcp"
	if who := whoami(t, mcpURL, "cca_rOZOfdd5J0DCF5O9_6IthuhGO1lLLV1ErIeF9INGFMU"); who != "refused" {
		t.Fatalf("the imported upstream token worked: %s", who)
	}
	fresh, err := r.Services.Agents.RotateToken("builder-codex")
	noErr(t, err)
	if who := whoami(t, mcpURL, fresh.Token); !strings.Contains(who, "builder-codex") {
		t.Fatalf("whoami with the token issued after the import: %s", who)
	}
	if who := whoami(t, mcpURL, "cca_g7hUnGwkD-dB5VCLH0Pec5LPpdVqPlDDR4hnwX33le8"); who != "refused" {
		t.Fatalf("a rotated-away upstream token worked: %s", who)
	}
}

// whoami calls the whoami tool with a real MCP client and returns its text,
// or "refused" when the token is not accepted.
func whoami(t *testing.T, url, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialMCP(ctx, url, token, "import-test")
	if err != nil {
		return "refused"
	}
	defer c.Close()
	res, err := c.CallTool(ctx, toolRequest("whoami", nil))
	if err != nil {
		return "refused"
	}
	var sb strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	poll.Until(t, what, 20*time.Second, cond)
}
