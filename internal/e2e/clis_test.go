package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/e2e"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// EnvCLIs names the folder with the installed CLIs' programs (claude, codex,
// gemini): .ci/clis/node_modules/.bin after `npm ci` in .ci/clis.
const EnvCLIs = "CROSSCHAT_E2E_CLIS"

// EnvRoot optionally names a folder for the CLIs' homes and working
// folders; by default one under the user's cache folder. It must not be
// under /tmp: Codex refuses to create its sandbox helpers there.
const EnvRoot = "CROSSCHAT_E2E_ROOT"

// runDeadline bounds one round of one CLI, from posting to the result.
const runDeadline = 120 * time.Second

// runTokenPattern matches a relay run token.
var runTokenPattern = regexp.MustCompile(regexp.QuoteMeta(relay.RunTokenPrefix) + `[A-Za-z0-9_-]{20,}`)

// cliCase is one agent CLI driven end to end.
type cliCase struct {
	name    string // subtest and program name
	harness string // relay preset id
	api     string // fake model API
	// env are the variables the CLI needs to use the fake model (url is its
	// base URL); they are set in the test's environment and named in the
	// worker's Env.
	env func(url string) map[string]string
	// setup writes the CLI's settings into its home.
	setup func(home, url string) error
	// command is the shell step of the script ("" for none).
	command string
}

func cases() []cliCase {
	return []cliCase{
		{
			name: "claude", harness: "claude-code", api: e2e.Anthropic,
			env: func(url string) map[string]string {
				return map[string]string{
					"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-e2e-fake",
					"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
				}
			},
		},
		{
			name: "codex", harness: "codex", api: e2e.Responses,
			env: func(url string) map[string]string { return map[string]string{"E2E_FAKE_MODEL_KEY": "fake"} },
			setup: func(home, url string) error {
				return writeFile(filepath.Join(home, ".codex", "config.toml"),
					"model = \"fake-model\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\n"+
						"base_url = \""+url+"/v1\"\nwire_api = \"responses\"\nenv_key = \"E2E_FAKE_MODEL_KEY\"\n")
			},
			// Prints the run token, which the activity must hide.
			command: `echo "token: $CROSSCHAT_TOKEN"`,
		},
		{
			name: "gemini", harness: "gemini", api: e2e.Gemini,
			env: func(url string) map[string]string {
				return map[string]string{
					"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "e2e-fake", "GEMINI_CLI_TRUST_WORKSPACE": "true",
				}
			},
			// The relay's tools come from the preset's run settings file
			// (GEMINI_CLI_SYSTEM_SETTINGS_PATH, server trusted); the user
			// settings here only choose the fake API key and quiet the CLI.
			setup: func(home, url string) error {
				return writeFile(filepath.Join(home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`)
			},
		},
	}
}

// cliFolder returns the absolute folder of the real agent CLIs named by
// EnvCLIs, or skips the test (naming the programs it needs) when it is unset.
func cliFolder(t *testing.T, programs string) string {
	t.Helper()
	dir := os.Getenv(EnvCLIs)
	if dir == "" {
		t.Skipf("set %s to the folder with the %s programs (cd .ci/clis && npm ci; %s=$PWD/node_modules/.bin) to run the real agent CLIs end to end", EnvCLIs, programs, EnvCLIs)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRealCLIs runs each real agent CLI as a relay worker against a scripted
// fake model: a task from the operator makes it list the relay's agents and
// hand a review off over MCP with its run token, write a file and answer;
// the answer is the task's result and the steps and the file are on the
// task. A request-changes round then resumes the CLI's own session.
func TestRealCLIs(t *testing.T) {
	eachCLI(t, cliFolder(t, "claude, codex and gemini"), runCLI)
}

// eachCLI runs run as a subtest for each of cases(), with the CLI's program
// in bin (the subtest fails when it is missing) and its own folder below a
// new root.
func eachCLI(t *testing.T, bin string, run func(t *testing.T, tc cliCase, program, base string)) {
	root := newRoot(t)
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			program := filepath.Join(bin, tc.name)
			if _, err := os.Stat(program); err != nil {
				t.Fatalf("%s: %v (run npm ci in .ci/clis)", tc.name, err)
			}
			run(t, tc, program, filepath.Join(root, tc.name))
		})
	}
}

// cliEnvironment makes the CLI's home and work folders and starts the fake
// model with script (closed when the test ends); it points HOME and the XDG
// folders at home, sets tc's variables for the model and runs tc's setup.
// It returns the model and the names of the variables tc set, which the
// worker must pass on.
func cliEnvironment(t *testing.T, tc cliCase, home, work string, script e2e.Script) (*e2e.FakeModel, []string) {
	t.Helper()
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fm, err := e2e.StartFakeModel(tc.api, script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fm.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	var names []string
	for k, v := range tc.env(fm.URL()) {
		t.Setenv(k, v)
		names = append(names, k)
	}
	if tc.setup != nil {
		if err := tc.setup(home, fm.URL()); err != nil {
			t.Fatal(err)
		}
	}
	return fm, names
}

func runCLI(t *testing.T, tc cliCase, program, base string) {
	start := time.Now()
	home, work := filepath.Join(base, "home"), filepath.Join(base, "work")
	if err := writeFile(filepath.Join(work, "README.md"), "# Harbour\n"); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("e2e-%s-%d", tc.name, time.Now().UnixNano()%1e6)
	file := "REVIEW-" + tc.name + ".md"
	fm, names := cliEnvironment(t, tc, home, work, e2e.Script{
		Marker: marker, Workdir: work, File: file, HandOffTo: "reviewer", Command: tc.command,
	})

	r := startRelay(t, filepath.Join(base, "data"))
	builderAndReviewer(t, r, tc.name)
	if _, err := r.Services.Workers.Save(relay.WorkerConfig{
		AgentSlug: "builder", Harness: tc.harness, Command: program, Workdir: work,
		AllowedSenders: []string{"operator"}, TimeoutMinutes: 5, Enabled: true, Exclusive: true, Env: names,
	}); err != nil {
		t.Fatalf("save worker: %v", err)
	}
	task, err := r.Services.Tasks.Post(app.NewTask{
		RecipientSlug: "builder", Title: "Review notes " + marker,
		Instructions: "Write " + file + " with a short review, and hand the review itself to the reviewer agent.",
	})
	if err != nil {
		t.Fatalf("post task: %v", err)
	}
	dataDir := r.Config().DataDir
	t.Cleanup(func() {
		if t.Failed() {
			logFailure(t, r, task.ID, fm)
		}
	})

	// Round 1.
	tokens := map[string]bool{}
	d := waitDone(t, r, task.ID, 1, dataDir, tokens)
	steps := activity(t, r, task.ID)
	seen := fm.Seen()
	if len(seen.Problems) > 0 {
		t.Errorf("the fake model got unexpected requests: %v", seen.Problems)
	}
	last := d.Task.Reports[len(d.Task.Reports)-1]
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(last.Result, e2e.FinalPrefix+marker) {
		t.Fatalf("round 1: task %s, last report %s: %q / result %q", d.Task.Status, last.Kind, last.Message, last.Result)
	}
	t.Logf("round 1 done in %s: result %q", time.Since(start).Round(time.Millisecond), last.Result)

	// The relay's tools, called with the run token.
	if seen.MCPOffered {
		agents := seen.Results["list_agents"]
		if !strings.Contains(agents, `reviewer`) || !strings.Contains(agents, `builder`) {
			t.Errorf("the model did not get the relay's agents from list_agents: %q", agents)
		}
		// The hand-off names no parent: only a run token makes it a child
		// of the run's task, so this also proves the CLI used that token.
		child := e2e.TaskID(seen.Results["post_task"])
		if child == "" {
			t.Errorf("the model did not get a task from post_task: %q", seen.Results["post_task"])
		}
		var handedOff bool
		for _, c := range d.Related.Children {
			if c.ID == child && c.RecipientSlug == "reviewer" && c.SenderSlug == "builder" {
				handedOff = true
			}
		}
		if !handedOff {
			t.Errorf("the hand-off %s is not a child of the task from builder to reviewer: %+v", child, d.Related.Children)
		}
		wantStep(t, steps, "a tool step for list_agents", func(e relay.ActivityEntry) bool {
			return e.Kind == relay.StepTool && strings.Contains(e.Text, "› list_agents") && e.Status == relay.StepOK
		})
		wantStep(t, steps, "a tool step for post_task", func(e relay.ActivityEntry) bool {
			return e.Kind == relay.StepTool && strings.Contains(e.Text, "› post_task") && e.Status == relay.StepOK
		})
	} else {
		t.Errorf("the relay's MCP tools were not offered to the model; tools: %v", seen.ToolsOffered)
	}
	// Claude Code 2.1.332 defers MCP tools behind ToolSearch unless their
	// server is "alwaysLoad", which the preset sets for the run's server.
	if len(seen.ToolSearches) > 0 || len(seen.Deferred) > 0 {
		t.Errorf("the run's own MCP server was not loaded up front: deferred %v, searched %v", seen.Deferred, seen.ToolSearches)
	}

	// The file: a step from the CLI's stream and the files entry.
	path := filepath.Join(work, file)
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), marker) {
		t.Errorf("the CLI did not write %s: %q, %v", path, b, err)
	}
	wantStep(t, steps, "a file step for "+file, func(e relay.ActivityEntry) bool {
		return e.Kind == relay.StepFile && strings.Contains(e.Text, file) && e.Status == relay.StepOK
	})
	wantStep(t, steps, "a files entry with "+file, func(e relay.ActivityEntry) bool {
		for _, f := range e.Files {
			if e.Kind == relay.StepFiles && f.Path == path && f.Change == relay.FileAdded {
				return true
			}
		}
		return false
	})
	if tc.command != "" {
		wantStep(t, steps, "a command step with the run token hidden", func(e relay.ActivityEntry) bool {
			return e.Kind == relay.StepCommand && strings.Contains(e.Detail, "token: [hidden]")
		})
		if got := seen.Results["command"]; runTokenPattern.FindString(got) == "" {
			t.Errorf("the command did not see a run token: %q", got)
		} else {
			tokens[runTokenPattern.FindString(got)] = true
		}
	}
	wantStep(t, steps, "the final message", func(e relay.ActivityEntry) bool {
		return e.Kind == relay.StepMessage && strings.Contains(e.Text, e2e.FinalPrefix+marker)
	})
	wantStep(t, steps, "a successful end", func(e relay.ActivityEntry) bool {
		return e.Kind == relay.StepEnd && e.Status == relay.StepOK
	})

	// Round 2: request changes; the worker resumes the CLI's session.
	if _, err := r.Services.Tasks.RequestChanges(task.ID, "Please also mention "+marker+" in the summary."); err != nil {
		t.Fatalf("request changes: %v", err)
	}
	mid := time.Now()
	d = waitDone(t, r, task.ID, 2, dataDir, tokens)
	steps = activity(t, r, task.ID)
	seen = fm.Seen()
	last = d.Task.Reports[len(d.Task.Reports)-1]
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(last.Result, e2e.Round2Prefix+marker) {
		t.Fatalf("round 2: task %s, last report %s: %q / result %q", d.Task.Status, last.Kind, last.Message, last.Result)
	}
	t.Logf("round 2 done in %s: result %q", time.Since(mid).Round(time.Millisecond), last.Result)
	if !seen.Round2History {
		t.Errorf("round 2 did not resume the first round's session: %s", seen.Round2Detail)
	}
	if n := countKind(steps, relay.StepStart); n != 2 {
		t.Errorf("%d start steps after two rounds, want 2", n)
	}

	// No run token in any step or report.
	texts := make([]string, 0, len(steps)+len(d.Task.Reports))
	for _, e := range steps {
		texts = append(texts, fmt.Sprintf("step %d (%s): %s\n%s", e.Seq, e.Kind, e.Text, e.Detail))
	}
	for _, rep := range d.Task.Reports {
		texts = append(texts, fmt.Sprintf("report %s: %s\n%s", rep.Kind, rep.Message, rep.Result))
	}
	for _, s := range texts {
		where, _, _ := strings.Cut(s, ":")
		for tok := range tokens {
			if strings.Contains(s, tok) {
				t.Errorf("%s shows the run token", where)
			}
		}
		if m := runTokenPattern.FindString(s); m != "" {
			t.Errorf("%s shows a run token: %q", where, m[:8]+"…")
		}
	}
	t.Logf("%d run token(s) caught and checked against the activity and reports", len(tokens))
	t.Logf("%s: %d steps, %d model requests, %s in all", tc.name, len(steps), len(seen.Requests), time.Since(start).Round(time.Millisecond))
}

// newRoot makes the folder for the CLIs' homes and working folders, outside
// /tmp, and removes it when the test ends.
func newRoot(t *testing.T) string {
	t.Helper()
	parent := os.Getenv(EnvRoot)
	if parent == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no folder for the CLIs (set %s): %v", EnvRoot, err)
		}
		parent = filepath.Join(cache, "crosschat-e2e")
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("CROSSCHAT_E2E_KEEP") != "" {
			t.Logf("kept %s", root)
			return
		}
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("remove %s: %v", root, err)
		}
	})
	return root
}

// startRelay runs a whole relay in-process on a free loopback port.
func startRelay(t *testing.T, dataDir string) *app.Relay {
	t.Helper()
	return apptest.Start(t, apptest.Config(dataDir), app.StartOptions{Version: "e2e"})
}

// waitDone polls the task until it is completed or blocked with at least
// rounds final reports, failing after runDeadline. While it waits it picks
// up the run token from the run folder's mcp.json, for the token checks.
func waitDone(t *testing.T, r *app.Relay, id string, rounds int, dataDir string, tokens map[string]bool) app.TaskDetail {
	t.Helper()
	deadline := time.Now().Add(runDeadline)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	mcpFile := filepath.Join(dataDir, "runs", id, "mcp.json")
	for {
		if b, err := os.ReadFile(mcpFile); err == nil {
			if tok := runTokenPattern.FindString(string(b)); tok != "" {
				tokens[tok] = true
			}
		}
		d, err := r.Services.Tasks.Get(id)
		if err != nil {
			t.Fatalf("get task: %v", err)
		}
		finals := 0
		for _, rep := range d.Task.Reports {
			if rep.Kind == relay.ReportCompleted || rep.Kind == relay.ReportBlocked {
				finals++
			}
		}
		if (d.Task.Status == relay.StatusCompleted || d.Task.Status == relay.StatusBlocked) && finals >= rounds {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: task still %s after %s", rounds, d.Task.Status, runDeadline)
		}
		<-tick.C
	}
}

func activity(t *testing.T, r *app.Relay, id string) []relay.ActivityEntry {
	t.Helper()
	steps, err := r.Services.Tasks.Activity(id)
	if err != nil {
		t.Fatalf("activity: %v", err)
	}
	return steps
}

// wantStep fails unless some step matches.
func wantStep(t *testing.T, steps []relay.ActivityEntry, what string, match func(relay.ActivityEntry) bool) {
	t.Helper()
	for _, e := range steps {
		if match(e) {
			return
		}
	}
	t.Errorf("no %s among the steps", what)
}

func countKind(steps []relay.ActivityEntry, kind string) int {
	n := 0
	for _, e := range steps {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// logFailure logs the task, its steps (the CLI's stderr shows up in the
// end step's message) and what the fake model saw.
func logFailure(t *testing.T, r *app.Relay, id string, fm *e2e.FakeModel) {
	t.Helper()
	if d, err := r.Services.Tasks.Get(id); err == nil {
		for _, rep := range d.Task.Reports {
			t.Logf("report %s: %s\n%s", rep.Kind, rep.Message, rep.Result)
		}
	}
	if steps, err := r.Services.Tasks.Activity(id); err == nil {
		for _, e := range steps {
			b, _ := json.Marshal(e)
			t.Logf("step %s", b)
		}
	}
	if fm != nil {
		s := fm.Seen()
		t.Logf("fake model: requests %v\ntools %v\nresults %v\nround 2: %v %s\nproblems %v",
			s.Requests, s.ToolsOffered, s.Results, s.Round2History, s.Round2Detail, s.Problems)
		body := s.LastBody
		if len(body) > 6000 {
			body = body[:6000] + "…"
		}
		t.Logf("last model request: %s", body)
	}
}

func writeFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// TestRealCLIsToolSearch runs Claude Code as a worker through the custom
// preset with the run's plain mcp.json, which has no "alwaysLoad": from
// 2.1.332 on, Claude Code then defers the relay's tools behind ToolSearch
// (the request names them in a system message and sends only ToolSearch).
// The fake model loads list_agents and post_task with ToolSearch
// ("select:<tool>") and calls them, so the hand-off proves post_task went
// through the run's own MCP server the deferred way. On versions that send
// the tools up front (2.1.197) the same run calls them directly.
func TestRealCLIsToolSearch(t *testing.T) {
	bin := cliFolder(t, "claude")
	program := filepath.Join(bin, "claude")
	if _, err := os.Stat(program); err != nil {
		t.Fatalf("claude: %v (run npm ci in .ci/clis)", err)
	}
	tc := cases()[0]
	base := filepath.Join(newRoot(t), "claude-toolsearch")
	home, work := filepath.Join(base, "home"), filepath.Join(base, "work")
	marker := fmt.Sprintf("e2e-search-%d", time.Now().UnixNano()%1e6)
	file := "REVIEW-search.md"
	fm, names := cliEnvironment(t, tc, home, work, e2e.Script{Marker: marker, Workdir: work, File: file, HandOffTo: "reviewer"})
	r := startRelay(t, filepath.Join(base, "data"))
	for _, a := range []relay.CreateAgentInput{
		{Slug: "builder", DisplayName: "Builder", ModelSlug: "claude", Capabilities: []string{"file-system"}},
		{Slug: "reviewer", DisplayName: "Reviewer", ModelSlug: "person", Capabilities: []string{"review"}},
	} {
		if _, err := r.Services.Agents.Create(a); err != nil {
			t.Fatalf("create agent %s: %v", a.Slug, err)
		}
	}
	if _, err := r.Services.Workers.Save(relay.WorkerConfig{
		AgentSlug: "builder", Harness: relay.HarnessCustom, Command: program, Workdir: work, PromptMode: relay.PromptStdin,
		Args: []string{"-p", "--output-format", "text", "--permission-mode", "acceptEdits",
			"--mcp-config", "{mcp_config}", "--allowedTools", "mcp__crosschat-run"},
		AllowedSenders: []string{"operator"}, TimeoutMinutes: 5, Enabled: true, Exclusive: true, Env: names,
	}); err != nil {
		t.Fatalf("save worker: %v", err)
	}
	task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "builder", Title: "Review notes " + marker,
		Instructions: "Write " + file + " with a short review, and hand the review itself to the reviewer agent."})
	if err != nil {
		t.Fatalf("post task: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logFailure(t, r, task.ID, fm)
		}
	})
	d := waitDone(t, r, task.ID, 1, r.Config().DataDir, map[string]bool{})
	seen := fm.Seen()
	last := d.Task.Reports[len(d.Task.Reports)-1]
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(last.Result, e2e.FinalPrefix+marker) {
		t.Fatalf("task %s, last report %s: %q / result %q", d.Task.Status, last.Kind, last.Message, last.Result)
	}
	child := e2e.TaskID(seen.Results["post_task"])
	var handedOff bool
	for _, c := range d.Related.Children {
		handedOff = handedOff || c.ID == child && c.RecipientSlug == "reviewer" && c.SenderSlug == "builder"
	}
	if child == "" || !handedOff {
		t.Fatalf("post_task did not hand off through the run's server: result %q, children %+v", seen.Results["post_task"], d.Related.Children)
	}
	if len(seen.Deferred) == 0 {
		t.Logf("this Claude Code sent the relay's tools up front (no ToolSearch); called directly")
		return
	}
	want := "select:mcp__" + "crosschat-run__post_task"
	if !slices.Contains(seen.Deferred, "mcp__crosschat-run__post_task") || !slices.Contains(seen.ToolSearches, want) {
		t.Fatalf("deferred %v, searches %v; want post_task deferred and loaded with %q", seen.Deferred, seen.ToolSearches, want)
	}
	t.Logf("deferred %v; loaded with ToolSearch %v; post_task made %s", seen.Deferred, seen.ToolSearches, child)
}

// builderAndReviewer creates the two agents of a real-CLI run on r: the
// builder the worker serves (its model named model) and the reviewer it
// hands off to.
func builderAndReviewer(t *testing.T, r *app.Relay, model string) {
	t.Helper()
	for _, a := range []relay.CreateAgentInput{
		{Slug: "builder", DisplayName: "Builder", ModelSlug: model, Capabilities: []string{"file-system"}},
		{Slug: "reviewer", DisplayName: "Reviewer", ModelSlug: "person", Capabilities: []string{"review"}},
	} {
		if _, err := r.Services.Agents.Create(a); err != nil {
			t.Fatalf("create agent %s: %v", a.Slug, err)
		}
	}
}
