package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
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
