package cli_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The verbs' tests run the verbs in this process against real relays
// (apptest), as a person's shell would run the binary.

func startRelay(t *testing.T) *app.Relay {
	t.Helper()
	return apptest.Relay(t)
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return apptest.Command(args...)
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func createAgent(t *testing.T, r *app.Relay, slug string) {
	t.Helper()
	_, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}})
	noErr(t, err)
}

// Ensure the CLI verbs talk to the running relay and print JSON.
func TestCLIVerbs(t *testing.T) {
	r := startRelay(t)
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir, "--json"}
	t.Setenv("CROSSCHAT_API_TOKEN", "")

	out, errs, code := run(t, append([]string{"agents", "add", "cli-agent", "--name", "CLI", "--model", "m", "--capability", "text-input", "--capability", "code-execution"}, loc...)...)
	var rev app.TokenReveal
	if code != 0 || json.Unmarshal([]byte(out), &rev) != nil || !strings.HasPrefix(rev.Token, "cca_") || len(rev.Agent.Capabilities) != 2 {
		t.Fatalf("agents add: %d %s %s", code, out, errs)
	}
	out, _, code = run(t, append([]string{"agents", "list"}, loc...)...)
	var agents []relay.Agent
	if code != 0 || json.Unmarshal([]byte(out), &agents) != nil || len(agents) != 2 {
		t.Fatalf("agents list: %d %s", code, out)
	}
	out, _, code = run(t, append([]string{"invites", "create", "--uses", "3", "--expires", "1h", "--name", "Ada", "--first-task-title", "Hello", "--first-task-instructions", "Say hello"}, loc...)...)
	var inv app.InviteCreated
	if code != 0 || json.Unmarshal([]byte(out), &inv) != nil || inv.Invite.MaxUses != 3 || inv.Invite.FirstTask == nil || !strings.HasPrefix(inv.Code, "cci_") {
		t.Fatalf("invites create: %d %s", code, out)
	}
	if _, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "cli-agent", Title: "From CLI test", Instructions: "x"}); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, append([]string{"tasks", "list", "--status", "queued"}, loc...)...)
	var tasks []relay.TaskSummary
	if code != 0 || json.Unmarshal([]byte(out), &tasks) != nil || len(tasks) != 1 || tasks[0].Title != "From CLI test" {
		t.Fatalf("tasks list: %d %s", code, out)
	}
	out, _, code = run(t, "token", "--data-dir", r.Config().DataDir)
	tok, err := r.Config().AdminToken(false)
	noErr(t, err)
	if code != 0 || strings.TrimSpace(out) != tok {
		t.Fatalf("token: %d %q", code, out)
	}
	if out, _, code = run(t, "version"); code != 0 || !strings.Contains(out, "test") {
		t.Fatalf("version: %d %q", code, out)
	}

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown verb", []string{"frobnicate"}, 2, "unknown command"},
		{"agents add without slug", append([]string{"agents", "add", "--name", "x"}, loc...), 2, "needs a slug"},
		{"service without action", []string{"service", "--json"}, 2, "crosschat-relay: service needs install, uninstall or status\n"},
		{"unknown mesh action", append([]string{"mesh", "frob"}, loc...), 2, `mesh needs status, agents, relays, trust, block, invite, names, name or nats-config, not "frob"`},
		{"mesh trust without a relay", append([]string{"mesh", "trust"}, loc...), 2, "mesh trust needs a relay's name or id"},
		{"mesh trust outside a mesh", append([]string{"mesh", "trust", "gpu-box"}, loc...), 1, "not in a mesh"},
		{"unknown workers action", append([]string{"workers", "start"}, loc...), 2, `workers needs list, set, remove, pause or resume, not "start"`},
		{"domain refusal", append([]string{"agents", "add", "cli-agent", "--name", "x", "--model", "m", "--capability", "c"}, loc...), 1, "agent_exists"},
		{"bad status", append([]string{"tasks", "list", "--status", "done"}, loc...), 2, "--status"},
		{"nothing running", []string{"agents", "list", "--port", "1", "--data-dir", r.Config().DataDir}, 1, "no relay is running"},
		{"no token", []string{"agents", "list", "--data-dir", t.TempDir()}, 1, "no admin token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs, code := run(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Fatalf("code %d stderr %q, want %d containing %q", code, errs, tt.code, tt.want)
			}
		})
	}
}

// Ensure `version` (and its aliases) prints the version, or with --json
// {"version": ...} as the other verbs' --json print theirs (it refused
// --json as an argument), and refuses what it does not take.
func TestVersionVerb(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{"version"}, 0, "crosschat-relay test\n", ""},
		{[]string{"--version"}, 0, "crosschat-relay test\n", ""},
		{[]string{"version", "--json"}, 0, "{\n  \"version\": \"test\"\n}\n", ""},
		{[]string{"-v", "--json"}, 0, "{\n  \"version\": \"test\"\n}\n", ""},
		{[]string{"version", "--json=false"}, 0, "crosschat-relay test\n", ""},
		{[]string{"version", "now"}, 2, "", `version takes no arguments, got "now"`},
		{[]string{"version", "--frob"}, 2, "", "version: unknown flag --frob"},
	} {
		out, errs, code := run(t, tc.args...)
		if code != tc.code || out != tc.out || !strings.Contains(errs, tc.errs) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, out, errs, tc.code, tc.out, tc.errs)
		}
	}
	out, _, _ := run(t, "version", "--help")
	if !strings.Contains(out, "  --json\n      print JSON\n") {
		t.Errorf("version --help does not name --json:\n%s", out)
	}
}

// Ensure `autostart` enables, reports and disables the login entry.
func TestAutostartVerb(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if _, errs, code := run(t, "autostart"); code != 2 || !strings.Contains(errs, "enable, disable or status") {
		t.Fatalf("no action: %d %s", code, errs)
	}
	// go-autostart reads XDG_CONFIG_HOME when the process starts, so only
	// the status round trip through this process's own path is checked here;
	// internal/desktop tests the entry itself.
	out, errs, code := run(t, "autostart", "status", "--json")
	var st map[string]bool
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: %d %s %s", code, out, errs)
	}
	// Tests build without Wails' tags, as the headless build: its login
	// entry would start a program with no window (exit 2), so enable
	// refuses, pointing to the service, and writes nothing.
	out, errs, code = run(t, "autostart", "enable", "--json")
	if code == 0 {
		run(t, "autostart", "disable") // the entry it wrote is the user's own
	}
	if code != 1 || out != "" || !strings.Contains(errs, "this build has no window") || !strings.Contains(errs, "crosschat-relay service install") {
		t.Errorf("enable on a headless build: exit %d, %q %q", code, out, errs)
	}
}

// Ensure `tasks show ID` prints a task as the dashboard's timeline does:
// its state with the claim, who sent it to whom, its instructions, each
// report and the result, what agents wrote cleaned of terminal controls;
// --json the whole detail; a malformed id is a usage error of ID.
func TestTasksShow(t *testing.T) {
	r := startRelay(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	createAgent(t, r, "builder")
	svc, ctx := r.Service(), t.Context()
	task, err := svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "builder", Title: "Fix the build", Instructions: "Run make.\n\x1b[31mred\x1b[0m second line"})
	noErr(t, err)
	_, err = svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "builder", Via: relay.ViaChat})
	noErr(t, err)
	_, err = svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "builder", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "Done.", Result: "all green\nsee CI"})
	noErr(t, err)

	out, errs, code := run(t, append([]string{"tasks", "show", task.ID}, loc...)...)
	for _, want := range []string{task.ID + "  Fix the build\n", "  Status    completed (claimed ", " via chat)\n", "  From, to  operator → builder\n",
		"  Priority  normal\n", "Instructions:\n  Run make.\n  ", "second line\n", "\nTimeline:\n", "completed Done.\n", "  Result:\n    all green\n    see CI\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("tasks show: exit %d, %q\nlacks %q (stderr %q)", code, out, want, errs)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Fatalf("tasks show printed a terminal control: %q", out)
	}
	// The list says priorities in the words send takes and the dashboard shows.
	out, _, code = run(t, append([]string{"tasks", "list", "--query", task.ID}, loc...)...)
	if code != 0 || !strings.Contains(out, "PRIORITY") || !regexp.MustCompile(task.ID+`\s+completed\s+normal\s+operator → builder`).MatchString(out) {
		t.Fatalf("tasks list: exit %d, %q", code, out)
	}
	out, _, code = run(t, append([]string{"tasks", "show", task.ID, "--json"}, loc...)...)
	var d app.TaskDetail
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Task.ID != task.ID || len(d.Task.Reports) != 1 || d.Task.Reports[0].Result != "all green\nsee CI" {
		t.Fatalf("tasks show --json: exit %d, %q", code, out)
	}
	_, errs, code = run(t, append([]string{"tasks", "show", "nope"}, loc...)...)
	if code != 2 || !strings.Contains(errs, "tasks show: ID must be a task id") {
		t.Fatalf("tasks show nope: exit %d, %q", code, errs)
	}
	_, errs, code = run(t, append([]string{"tasks", "show", "01a25120-a6f0-78e0-be0e-ad9ff9936d1d"}, loc...)...)
	if code != 1 || !strings.Contains(errs, "Unknown task") {
		t.Fatalf("tasks show of an unknown task: exit %d, %q", code, errs)
	}

	// Part of an id, as tasks list --query and the dashboard's search take
	// it: one task is shown; none, or several, are said. Time-ordered ids
	// share their first characters, so the ids' ends tell these apart.
	other, err := svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "builder", Title: "Second", Instructions: "x"})
	noErr(t, err)
	common := 0
	for common < len(task.ID) && task.ID[common] == other.ID[common] {
		common++
	}
	for _, tc := range []struct {
		ref  string
		code int
		want string
	}{
		{strings.ToUpper(task.ID[:max(common+1, 8)]), 0, task.ID + "  Fix the build\n"},
		{other.ID[:max(common+1, 8)], 0, other.ID + "  Second\n"},
		{task.ID[len(task.ID)-12:], 0, task.ID + "  Fix the build\n"},
		{"ffffffff-ff", 1, `no task id holds "ffffffff-ff"`},
	} {
		out, errs, code := run(t, append([]string{"tasks", "show", tc.ref}, loc...)...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("tasks show %s: exit %d, %q %q; want %d and %q", tc.ref, code, out, errs, tc.code, tc.want)
		}
	}
	if common >= 8 {
		_, errs, code = run(t, append([]string{"tasks", "show", task.ID[:common]}, loc...)...)
		if code != 1 || !strings.Contains(errs, "2 task ids hold") || !strings.Contains(errs, task.ID) || !strings.Contains(errs, other.ID) {
			t.Errorf("tasks show of a start two ids share: exit %d, %q", code, errs)
		}
	}
}

// Ensure `tasks list --agent` of a name the relay has no agent of says so
// (the relay's unknown_agent, with the similar slugs) and fails, where it
// printed an empty table; an agent with no tasks is still an empty list.
func TestTasksListUnknownAgent(t *testing.T) {
	r := startRelay(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	createAgent(t, r, "builder")
	createAgent(t, r, "idle")
	createAgent(t, r, "gone")
	noErr(t, r.Services.Agents.Retire("gone"))
	_, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "builder", Title: "Fix the build", Instructions: "x"})
	noErr(t, err)
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		out, errs string
	}{
		{"an agent with tasks", []string{"--agent", "builder"}, 0, "Fix the build", ""},
		{"in another case", []string{"--agent", "Builder"}, 0, "Fix the build", ""},
		{"an agent without tasks", []string{"--agent", "idle"}, 0, "ID  ", ""},
		{"an agent without tasks, JSON", []string{"--agent", "idle", "--json"}, 0, "[]\n", ""},
		{"a known agent's tasks filtered away", []string{"--agent", "builder", "--status", "blocked"}, 0, "ID  ", ""},
		{"a near name", []string{"--agent", "buildr"}, 1, "", "crosschat-relay: No agent “buildr” (--agent) is on the relay's list of agents (a retired one is not); similar: builder. (unknown_agent)\n"},
		{"a near name, JSON", []string{"--agent", "buildr", "--json"}, 1, "", "similar: builder"},
		{"nobody near", []string{"--agent", "nobody"}, 1, "", "No agent “nobody” (--agent) is on the relay's list of agents (a retired one is not); crosschat-relay agents list shows them. (unknown_agent)"},
		// Retired with no tasks: not said to be nobody's name.
		{"a retired agent without tasks", []string{"--agent", "gone"}, 1, "", "(a retired one is not)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := run(t, append(append([]string{"tasks", "list"}, tc.args...), loc...)...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.errs) || (tc.code != 0 && out != "") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errs, tc.code, tc.out, tc.errs)
			}
		})
	}
}
