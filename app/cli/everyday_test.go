package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The everyday path's verbs, in process against a real relay: one way to
// find the project (the nearest registered folder at or above the current
// one), the project named on the command line, `projects`, the explicit id
// winning, and what send says about a recipient that is not a project.

// everyday is a relay, a private project store and a root folder for
// project folders.
type everyday struct {
	r     *app.Relay
	loc   []string
	store string
	root  string
}

func newEveryday(t *testing.T) *everyday {
	t.Helper()
	store := projectHome(t)
	r := startRelay(t)
	t.Setenv("CROSSCHAT_PORT", strconv.Itoa(r.Config().Port))
	t.Setenv("CROSSCHAT_DATA_DIR", r.Config().DataDir)
	t.Setenv("CLAUDE_CODE_SESSION_ID", "")
	return &everyday{r: r, loc: []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}, store: store, root: evalDir(t, t.TempDir())}
}

// apiSendsWeb registers the folders api and web and sends web a task from
// api, with message: it returns the folders and the task's id, the
// working folder left in api.
func (e *everyday) apiSendsWeb(t *testing.T, message string) (api, web, taskID string) {
	t.Helper()
	api, web = e.folder(t, "api"), e.folder(t, "web")
	e.register(t, api)
	e.register(t, web)
	t.Chdir(api)
	out, errs, code := run(t, "send", "web", message)
	if code != 0 {
		t.Fatalf("send: exit %d, %q", code, errs)
	}
	return api, web, strings.TrimSpace(out)
}

// folder makes root/rel and returns it.
func (e *everyday) folder(t *testing.T, rel string) string {
	t.Helper()
	dir := filepath.Join(e.root, filepath.FromSlash(rel))
	noErr(t, os.MkdirAll(dir, 0o755))
	return dir
}

// register registers dir (with args) and returns the id it printed.
func (e *everyday) register(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, errs, code := run(t, append([]string{"register", dir}, args...)...)
	if code != 0 {
		t.Fatalf("register %s %v: exit %d, %q", dir, args, code, errs)
	}
	return strings.TrimSpace(out)
}

// slugs is every agent the relay lists.
func (e *everyday) slugs(t *testing.T) map[string]relay.Agent {
	t.Helper()
	agents, err := e.r.Services.Agents.List()
	noErr(t, err)
	m := map[string]relay.Agent{}
	for _, a := range agents {
		m[a.Slug] = a
	}
	return m
}

// task reads a task as the operator.
func (e *everyday) task(t *testing.T, id string) relay.Task {
	t.Helper()
	task, err := e.r.Services.Tasks.Get(id)
	noErr(t, err)
	return task.Task
}

// send run in a subfolder of a registered project sends as that project
// (it used to register the subfolder as a project of its own, whose
// answers nobody read), and from a folder in no project it is refused
// naming register, creating no agent.
func TestSendFindsTheNearestProject(t *testing.T) {
	e := newEveryday(t)
	api, web := e.folder(t, "api"), e.folder(t, "web")
	e.register(t, api)
	e.register(t, web)
	sub := e.folder(t, "api/internal/store")
	before := e.slugs(t)

	t.Chdir(sub)
	out, errs, code := run(t, "send", "web", "Rebase on main")
	if code != 0 {
		t.Fatalf("send from a subfolder: exit %d, %q", code, errs)
	}
	if task := e.task(t, strings.TrimSpace(out)); task.SenderSlug != "api" || task.RecipientSlug != "web" {
		t.Fatalf("the task goes %s → %s, want api → web", task.SenderSlug, task.RecipientSlug)
	}
	if after := e.slugs(t); len(after) != len(before) {
		t.Fatalf("send created an agent: %d → %d agents", len(before), len(after))
	}

	t.Chdir(e.folder(t, "scratch"))
	_, errs, code = run(t, "send", "web", "hello")
	if code != 1 || !strings.Contains(errs, "crosschat-relay register") || !strings.Contains(errs, "--from") {
		t.Fatalf("send from a folder in no project: exit %d, %q", code, errs)
	}
	if after := e.slugs(t); len(after) != len(before) {
		t.Fatalf("send from an unregistered folder created an agent: %d → %d", len(before), len(after))
	}
	// --from names the sending project from anywhere.
	out, errs, code = run(t, "send", "api", "Schema?", "--from", "web")
	if code != 0 {
		t.Fatalf("send --from: exit %d, %q", code, errs)
	}
	if task := e.task(t, strings.TrimSpace(out)); task.SenderSlug != "web" || task.RecipientSlug != "api" {
		t.Fatalf("send --from web: %s → %s", task.SenderSlug, task.RecipientSlug)
	}
	_, errs, code = run(t, "send", "api", "x", "--from", "nowhere")
	if code != 1 || !strings.Contains(errs, `"nowhere"`) || !strings.Contains(errs, "projects list") {
		t.Fatalf("send --from an unknown project: exit %d, %q", code, errs)
	}
}

// The hook and register take the nearest registered folder too: a session
// started in a subfolder is the parent's project, not a new one.
func TestRegisterInASubfolderIsTheParentsProject(t *testing.T) {
	e := newEveryday(t)
	api := e.folder(t, "api")
	e.register(t, api)
	sub := e.folder(t, "api/cmd")
	before := e.slugs(t)
	if id := e.register(t, sub); id != "api" {
		t.Fatalf("register in a subfolder printed %q, want api", id)
	}
	out, _, code := run(t, "register", "--hook", "claude-code", sub)
	var hook struct{ SystemMessage string }
	if code != 0 || json.Unmarshal([]byte(out), &hook) != nil || !strings.Contains(hook.SystemMessage, `the project "api"`) {
		t.Fatalf("the hook in a subfolder: exit %d, %q", code, out)
	}
	if after := e.slugs(t); len(after) != len(before) {
		t.Fatalf("register in a subfolder created an agent")
	}
	// An explicit id makes the subfolder a project of its own.
	if id := e.register(t, sub, "--id", "api-cmd"); id != "api-cmd" {
		t.Fatalf("register --id in a subfolder printed %q", id)
	}
}

// monitor and channel take the project's id as an argument, from any
// folder; every flag after it counts, and what they do not know is refused
// by name with the verb's own usage (not the whole help).
func TestLiveVerbsNameTheProject(t *testing.T) {
	e := newEveryday(t)
	projb := e.folder(t, "projb")
	e.register(t, projb)
	// A revoked token ends the stream at once (exit 1): the verb got as far
	// as the relay with projb's token.
	_, err := e.r.Services.Agents.RevokeToken("projb")
	noErr(t, err)
	t.Chdir(e.folder(t, "elsewhere"))
	for _, verb := range []string{"monitor", "channel"} {
		_, errs, code := run(t, verb, "projb")
		if code != 1 || !strings.Contains(errs, "does not know the token kept for the project projb: it was revoked or replaced, or belongs to another relay; `crosschat-relay register` in its folder says what to do") {
			t.Errorf("%s projb from another folder: exit %d, %q", verb, code, errs)
		}
		_, errs, code = run(t, verb, "nobody")
		if code != 1 || !strings.Contains(errs, `"nobody"`) || !strings.Contains(errs, "projects list") {
			t.Errorf("%s of an unknown project: exit %d, %q", verb, code, errs)
		}
		_, errs, code = run(t, verb, "projb", "extra")
		if code != 2 || !strings.Contains(errs, `"extra"`) || strings.Contains(errs, "Crosschat Relay: a durable") || !strings.Contains(errs, "crosschat-relay "+verb+" [ID]") {
			t.Errorf("%s with two arguments: exit %d, %q", verb, code, errs)
		}
	}
	_, errs, code := run(t, "monitor", "projb", "--format", "message", "--frobnicate")
	if code != 2 || !strings.Contains(errs, "frobnicate") || strings.Contains(errs, "Crosschat Relay: a durable") {
		t.Fatalf("monitor with an unknown flag after the id: exit %d, %q", code, errs)
	}
	_, errs, code = run(t, "monitor", "projb", "--format", "xml")
	if code != 2 || !strings.Contains(errs, "--format") {
		t.Fatalf("monitor projb --format xml (a flag after the id): exit %d, %q", code, errs)
	}
}

// projects list shows each registered project with its folder and presence;
// projects remove retires its agent (token revoked, out of the agent list,
// its open tasks blocked) and forgets the folder.
func TestProjectsListAndRemove(t *testing.T) {
	e := newEveryday(t)
	api, web, taskID := e.apiSendsWeb(t, "Keep this task")

	out, errs, code := run(t, "projects", "list")
	if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, "FOLDER") || !strings.Contains(out, "LAST SEEN") {
		t.Fatalf("projects list: exit %d, %q %q", code, out, errs)
	}
	for _, want := range []string{"api", api, "web", web} {
		if !strings.Contains(out, want) {
			t.Errorf("projects list lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, "projects", "list", "--json")
	var listed []struct {
		ID, Dir, State string
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 2 || listed[0].ID != "api" || listed[0].Dir != api {
		t.Fatalf("projects list --json: %d %s", code, out)
	}
	// web was registered and no session connected to it: offline, as
	// docs/live-sessions.md says (register follows its stream and closes it).
	if listed[1].ID != "web" || listed[1].State != "offline" {
		t.Fatalf("a project no session connected to: %+v", listed[1])
	}

	out, errs, code = run(t, "projects", "remove", "web")
	if code != 0 || !strings.Contains(out, "web") {
		t.Fatalf("projects remove: exit %d, %q %q", code, out, errs)
	}
	if _, ok := e.slugs(t)["web"]; ok {
		t.Error("a removed project's agent is still listed")
	}
	a, err := e.r.Services.Agents.List()
	noErr(t, err)
	for _, x := range a {
		if x.Slug == "web" {
			t.Errorf("agents list keeps the removed project: %+v", x)
		}
	}
	if task := e.task(t, taskID); task.RecipientSlug != "web" {
		t.Fatalf("the removed project's task is gone or changed: %+v", task)
	}
	if ps := storedProjects(t, e.store); len(ps) != 1 || ps[0].ID != "api" {
		t.Fatalf("the store after remove: %+v", ps)
	}
	// Its token no longer works, and nobody can take its name.
	for _, args := range [][]string{{"send", "web", "still there?", "--agent"}, {"send", "web", "still there?"}} {
		// Without --agent too, the refusal says the project was removed
		// and how to bring it back, not that nobody registered it.
		_, errs, code = run(t, args...)
		if code == 0 || !strings.Contains(errs, "retired") || !strings.Contains(errs, "registering its folder again") || strings.Contains(errs, "nobody registered") {
			t.Fatalf("%q to a retired project: exit %d, %q", args, code, errs)
		}
	}
	_, errs, code = run(t, "projects", "remove", "nobody")
	if code != 1 || !strings.Contains(errs, `"nobody"`) {
		t.Fatalf("projects remove of an unknown id: exit %d, %q", code, errs)
	}
	// Registered again, the folder gets its project (and its tasks) back.
	if id := e.register(t, web); id != "web" {
		t.Fatalf("register after remove: %q", id)
	}
	if _, ok := e.slugs(t)["web"]; !ok {
		t.Fatal("register after remove did not bring the agent back")
	}
}

// An explicit id wins over the folder's registered one: the folder moves
// to the new id and the old one is retired, with a message naming both; a
// blank id is refused.
func TestRegisterExplicitIDWins(t *testing.T) {
	e := newEveryday(t)
	api := e.folder(t, "api")
	e.register(t, api)
	out, errs, code := run(t, "register", api, "--id", "billing")
	if code != 0 || out != "billing\n" || !strings.Contains(errs, `"api"`) || !strings.Contains(errs, `"billing"`) || !strings.Contains(errs, "retired") {
		t.Fatalf("register --id on a registered folder: exit %d, %q %q", code, out, errs)
	}
	agents := e.slugs(t)
	if _, ok := agents["api"]; ok {
		t.Error("the old id is still an agent in the list")
	}
	if a, ok := agents["billing"]; !ok || !a.HasToken {
		t.Error("the new id has no agent")
	}
	if ps := storedProjects(t, e.store); len(ps) != 1 || ps[0].ID != "billing" || ps[0].Dir != api {
		t.Fatalf("store: %+v", ps)
	}
	// CROSSCHAT_PROJECT_ID is explicit too (a project's .claude/settings.json sets it).
	t.Setenv("CROSSCHAT_PROJECT_ID", "ledger")
	if id := e.register(t, api); id != "ledger" {
		t.Fatalf("register with CROSSCHAT_PROJECT_ID: %q", id)
	}
	for _, blank := range []string{" ", "   \t"} {
		t.Setenv("CROSSCHAT_PROJECT_ID", "")
		_, errs, code := run(t, "register", api, "--id", blank)
		if code == 0 || !strings.Contains(errs, "blank") {
			t.Errorf("register --id %q: exit %d, %q", blank, code, errs)
		}
		t.Setenv("CROSSCHAT_PROJECT_ID", blank)
		_, errs, code = run(t, "register", api)
		if code == 0 || !strings.Contains(errs, "blank") {
			t.Errorf("CROSSCHAT_PROJECT_ID=%q: exit %d, %q", blank, code, errs)
		}
	}
}

// The root folder and the home folder are no project, with --id either:
// taken, every folder of the computer (or every project of the user's,
// a session started in the home folder registering it through the
// plugin's hook) was inside it and sent as it (newcomers' walks).
func TestRegisterRefusesTheRootAndHome(t *testing.T) {
	e := newEveryday(t)
	root := filepath.VolumeName(e.folder(t, "api")) + string(filepath.Separator)
	home, err := os.UserHomeDir()
	noErr(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"register", root}, "cannot be a project: every folder of the computer is inside it"},
		{[]string{"register", root, "--id", "rootdir"}, "cannot be a project: every folder of the computer is inside it"},
		{[]string{"register", home}, "is your home folder and cannot be a project"},
		{[]string{"register", home, "--id", "homedir"}, "is your home folder and cannot be a project"},
		{[]string{"register", filepath.Dir(home)}, filepath.Dir(home) + " holds your home folder and cannot be a project"},
	} {
		if _, errs, code := run(t, tc.args...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q", tc.args, code, errs)
		}
	}
	if _, err := os.Stat(e.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the store was written after the refusals: %v", err)
	}
	for _, id := range []string{"rootdir", "homedir", filepath.Base(home)} {
		if _, ok := e.slugs(t)[id]; ok {
			t.Errorf("the refused id %s is an agent", id)
		}
	}
}

// A project that holds the home folder, registered before such were
// refused, is no folder's project: a subfolder registers as its own, with a
// note saying to remove the old one, and a verb in another subfolder is in
// no project rather than that one.
func TestHomeProjectFromBeforeIsNoFoldersProject(t *testing.T) {
	e := newEveryday(t)
	me := e.folder(t, "me")
	e.register(t, me, "--id", "homedir") // HOME is elsewhere still
	app := e.folder(t, "me/src/app")
	other := e.folder(t, "me/src/other")
	t.Setenv("HOME", me)

	out, errs, code := run(t, "register", app)
	if code != 0 || strings.TrimSpace(out) != "app" || !strings.Contains(errs, `the project "homedir" (`+me+`) holds your home folder`) ||
		!strings.Contains(errs, "crosschat-relay projects remove homedir") {
		t.Fatalf("register below the home project: exit %d, %q %q", code, out, errs)
	}
	t.Chdir(other)
	_, errs, code = run(t, "send", "app", "hello")
	if code == 0 || !strings.Contains(errs, `the project "homedir", `+me+`, holds your home folder`) {
		t.Fatalf("send from another subfolder: exit %d, %q", code, errs)
	}
}

// send to an id that is no project registered here says what it is and
// asks for --agent; the name of an agent that is not the folder's project
// is not taken by register either, which says who holds it.
func TestSendAndRegisterKeepProjectsAndAgentsApart(t *testing.T) {
	e := newEveryday(t)
	api := e.folder(t, "api")
	e.register(t, api)
	createAgent(t, e.r, "builder")
	enroll(t, e.r, relay.EnrollInput{Slug: "billing", DisplayName: "Billing bot", ModelSlug: "m", Capabilities: []string{"text-input"}})
	t.Chdir(api)
	for _, tc := range []struct{ to, what string }{{"builder", "an agent"}, {"billing", "enrolled with an invite"}, {"operator", "operator"}} {
		_, errs, code := run(t, "send", tc.to, "deploy key is …")
		if code != 1 || !strings.Contains(errs, tc.what) || !strings.Contains(errs, "--agent") {
			t.Errorf("send %s: exit %d, %q", tc.to, code, errs)
		}
		out, errs, code := run(t, "send", tc.to, "go ahead", "--agent")
		if code != 0 {
			t.Errorf("send --agent %s: exit %d, %q", tc.to, code, errs)
		} else if task := e.task(t, strings.TrimSpace(out)); task.RecipientSlug != tc.to {
			t.Errorf("send --agent %s went to %s", tc.to, task.RecipientSlug)
		}
	}
	billing := e.folder(t, "billing")
	_, errs, code := run(t, "register", billing)
	if code != 1 || !strings.Contains(errs, "Billing bot") || !strings.Contains(errs, "invite") || !strings.Contains(errs, "--id") || !strings.Contains(errs, "CROSSCHAT_PROJECT_ID") {
		t.Fatalf("register over an invitee's name: exit %d, %q", code, errs)
	}
}

// enroll enrolls an agent with a fresh invite, as an invited agent does
// (POST /api/enroll).
func enroll(t *testing.T, r *app.Relay, in relay.EnrollInput) {
	t.Helper()
	inv, err := r.Services.Invites.Create(relay.InviteInput{MaxUses: 1, ExpiresInHours: 1})
	noErr(t, err)
	in.Invite = inv.Code
	body, err := json.Marshal(in)
	noErr(t, err)
	resp, err := http.Post(r.Config().BaseURL()+"/api/enroll", "application/json", bytes.NewReader(body))
	noErr(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("enroll %s: HTTP %d %s", in.Slug, resp.StatusCode, b)
	}
}

// send's own mistakes: a task to the sending project itself says what to do
// instead (send has no targetSession), and --priority takes only its
// three words or numbers.
func TestSendRefusals(t *testing.T) {
	e := newEveryday(t)
	api := e.folder(t, "api")
	e.register(t, api)
	t.Chdir(api)
	_, errs, code := run(t, "send", "api", "note to self")
	if code != 1 || strings.Contains(errs, "targetSession") || !strings.Contains(errs, "sends no task to itself") || !strings.Contains(errs, "--from") {
		t.Fatalf("send to itself: exit %d, %q", code, errs)
	}
	_, errs, code = run(t, "send", "web", "x", "--priority", "high")
	if code != 2 || !strings.Contains(errs, "urgent") || strings.Contains(errs, "Crosschat Relay: a durable") {
		t.Fatalf("--priority high: exit %d, %q", code, errs)
	}
}

// The SessionStart hook says what register says, for each cause register
// explains: no relay ever started on the data folder, no relay at the
// address, a missing folder, the root folder, the home folder (a session
// started there), a folder name with no letter or digit. Every answer is one JSON line, exit 0.
func TestHookTellsRegistersReason(t *testing.T) {
	e := newEveryday(t)
	never := filepath.Join(t.TempDir(), "never-started")
	noErr(t, os.MkdirAll(never, 0o700))
	proj := e.folder(t, "proj")
	for _, tc := range []struct {
		name string
		dir  string
		env  map[string]string
		want string
	}{
		{"no relay ever started", proj, map[string]string{"CROSSCHAT_DATA_DIR": never}, "api-token"},
		{"no relay at the address", proj, map[string]string{"CROSSCHAT_PORT": "1"}, "no relay is running at http://127.0.0.1:1"},
		{"a missing folder", filepath.Join(e.root, "gone"), nil, "there is no folder " + filepath.Join(e.root, "gone")},
		{"the root folder", "/", nil, "/ cannot be a project"},
		{"the home folder", os.Getenv("HOME"), nil, "is your home folder and cannot be a project"},
		{"no letter or digit", e.folder(t, "___"), nil, "no letter or digit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, regErr, code := run(t, "register", tc.dir)
			if code == 0 || !strings.Contains(regErr, tc.want) {
				t.Fatalf("register: exit %d, %q; want %q", code, regErr, tc.want)
			}
			out, _, code := run(t, "register", "--hook", "claude-code", tc.dir)
			var hook struct{ SystemMessage string }
			if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &hook) != nil {
				t.Fatalf("the hook: exit %d, %q", code, out)
			}
			reason := strings.TrimSpace(strings.TrimPrefix(regErr, "crosschat-relay: "))
			if !strings.Contains(hook.SystemMessage, "this session is not connected: "+reason) {
				t.Fatalf("the hook says %q;\nregister says %q", hook.SystemMessage, reason)
			}
		})
	}
}

// harnesses and workers set look for the CLIs on the relay's PATH, not this
// terminal's: both say which PATH that was and how to use a CLI elsewhere
// (--command), which the custom harness always needs.
func TestHarnessesNameTheRelaysPath(t *testing.T) {
	relayPath := filepath.Join(t.TempDir(), "relay-bin")
	noErr(t, os.MkdirAll(relayPath, 0o755))
	t.Setenv("PATH", relayPath)
	e := newEveryday(t)
	out, errs, code := run(t, append([]string{"harnesses"}, e.loc...)...)
	if code != 0 || !strings.Contains(out, "relay's PATH") || !strings.Contains(out, relayPath) || !strings.Contains(out, "--command") {
		t.Fatalf("harnesses: exit %d, %q %q", code, out, errs)
	}
	// Each row has a cell under VERSION ("-" for none): an empty one left
	// TESTED's "- (tested …)" reading as the version's.
	_, table, _ := strings.Cut(out, "\nID ")
	rows := strings.Split("ID "+strings.TrimRight(table, "\n"), "\n")
	col := strings.Index(rows[0], "VERSION")
	for _, row := range rows[1:] {
		if len(row) <= col || row[col] == ' ' || row[col-1] != ' ' {
			t.Errorf("harnesses: no cell under VERSION (column %d) in %q", col, row)
		}
	}
	work := e.folder(t, "work")
	createAgent(t, e.r, "builder")
	_, errs, code = run(t, append([]string{"workers", "set", "builder", "--harness", "codex", "--workdir", work}, e.loc...)...)
	if code != 1 || !strings.Contains(errs, "relay's PATH ("+relayPath+")") || !strings.Contains(errs, "--command on the CLI") {
		t.Fatalf("workers set with no codex on the relay's PATH: exit %d, %q", code, errs)
	}
	// The custom harness has nothing to find: it needs the program named.
	_, errs, code = run(t, append([]string{"workers", "set", "builder", "--harness", "custom", "--workdir", work}, e.loc...)...)
	if code != 1 || !strings.Contains(errs, "the custom harness runs the program you name: give its path (Program on the dashboard, --command on the CLI)") || strings.Contains(errs, "not found") {
		t.Fatalf("workers set --harness custom without --command: exit %d, %q", code, errs)
	}
}

// The plugin's MCP server (channel --register) may start before the hook
// has registered a folder whose sessions take their id from
// CROSSCHAT_PROJECT_ID: it registers the folder under that id itself.
func TestChannelRegistersTheEnvironmentsID(t *testing.T) {
	e := newEveryday(t)
	dir := e.folder(t, "checkout")
	t.Chdir(dir)
	t.Setenv("CROSSCHAT_PROJECT_ID", "Billing API")
	// A revoked token would end channel at once; here the relay is
	// reached, so channel runs: stop it by closing its standard input.
	r, w, err := os.Pipe()
	noErr(t, err)
	noErr(t, w.Close())
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	_, errs, code := run(t, "channel", "--register")
	if code != 0 {
		t.Fatalf("channel --register: exit %d, %q", code, errs)
	}
	if ps := storedProjects(t, e.store); len(ps) != 1 || ps[0].ID != "billing-api" || ps[0].Dir != dir {
		t.Fatalf("the store after channel --register: %+v", ps)
	}
}

// Projects of two relays on one computer: projects list says which relay
// holds a project the queried one does not, and a send across them says
// why it cannot go instead of "nobody registered".
func TestProjectsOfTwoRelays(t *testing.T) {
	e := newEveryday(t)
	other := startRelay(t)
	a, b := e.folder(t, "a-proj"), e.folder(t, "b-proj")
	e.register(t, a)
	e.register(t, b, "--port", strconv.Itoa(other.Config().Port), "--data-dir", other.Config().DataDir)
	out, errs, code := run(t, "projects", "list")
	if code != 0 || !strings.Contains(out, "on the relay at http://127.0.0.1:"+strconv.Itoa(other.Config().Port)) {
		t.Fatalf("projects list: exit %d, %q %q", code, out, errs)
	}
	t.Chdir(a)
	_, errs, code = run(t, "send", "b-proj", "hello")
	if code != 1 || !strings.Contains(errs, `the project "b-proj" is registered on the relay at`) {
		t.Fatalf("send across relays: exit %d, %q", code, errs)
	}
}

// send says when the recipient's worker does not take the sender's tasks
// (a worker takes the operator's unless told otherwise), which otherwise
// wait without a word, and says nothing once the sender is allowed, nor for
// a recipient without a worker.
func TestSendSaysTheWorkerWillNotRunIt(t *testing.T) {
	e := newEveryday(t)
	api := e.folder(t, "api")
	e.register(t, api)
	createAgent(t, e.r, "builder")
	save := func(senders ...string) {
		t.Helper()
		_, err := e.r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "builder", Harness: "custom", Command: "/bin/cat",
			Workdir: e.folder(t, "work"), AllowedSenders: senders, TimeoutMinutes: 1, Enabled: true})
		noErr(t, err)
	}
	save("operator")
	createAgent(t, e.r, "plain")
	t.Chdir(api)
	for _, c := range []struct {
		to   string
		note bool
	}{{"builder", true}, {"plain", false}} {
		out, errs, code := run(t, "send", "--agent", c.to, "List the files")
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("send to %s: exit %d, %q", c.to, code, errs)
		}
		want := "note: builder's worker runs only the tasks of operator, so this task waits for builder to claim it"
		if got := strings.Contains(errs, want) && strings.Contains(errs, "--allow-sender operator --allow-sender api"); got != c.note {
			t.Errorf("send to %s: the note %v, want %v: %q", c.to, got, c.note, errs)
		}
	}
	save("operator", "api")
	if _, errs, code := run(t, "send", "--agent", "builder", "Now run it"); code != 0 || strings.Contains(errs, "note:") {
		t.Errorf("send to a worker that takes the sender's tasks: exit %d, %q", code, errs)
	}
}

// send --from operator posts as the operator, through the dashboard's
// New task (Tasks.Post), with the admin token: the task a worker runs by
// default. It used to be refused as no project "operator"; a --from that is
// neither a project nor the operator says how to send as the operator, and
// without the admin token --from operator says that it needs it.
func TestSendFromTheOperator(t *testing.T) {
	e := newEveryday(t)
	createAgent(t, e.r, "builder")
	_, err := e.r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "builder", Harness: "custom", Command: "/bin/cat",
		Workdir: e.folder(t, "work"), AllowedSenders: []string{"operator"}, TimeoutMinutes: 1, Enabled: true})
	noErr(t, err)
	t.Chdir(e.folder(t, "elsewhere"))
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"operator", []string{"--agent", "--from", "operator"}, 0, ""},
		{"operator, any case", []string{"--agent", "--from", " Operator "}, 0, ""},
		{"operator to an agent without --agent", []string{"--from", "operator"}, 1, "send --agent builder"},
		{"neither a project nor the operator", []string{"--agent", "--from", "bob"}, 1, `no project "bob" is registered on this computer (crosschat-relay projects list shows those that are; crosschat-relay register makes a folder one); to send as you, the operator, use --from operator`},
		{"no admin token", []string{"--agent", "--from", "operator", "--data-dir", t.TempDir()}, 1, "--from operator sends as you, the operator, with the relay's admin token: no admin token in"},
		{"no project here", []string{"--agent"}, 1, "or send as you, the operator, with --from operator"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{"send", "builder", "Build it"}, c.args...)...)
			if code != c.code || !strings.Contains(errs, c.want) || strings.Contains(errs, "note:") {
				t.Fatalf("exit %d, stderr %q; want %d containing %q", code, errs, c.code, c.want)
			}
			if code == 0 {
				if task := e.task(t, strings.TrimSpace(out)); task.SenderSlug != "operator" || task.RecipientSlug != "builder" || task.Instructions != "Build it" {
					t.Errorf("task from %s to %s: %q", task.SenderSlug, task.RecipientSlug, task.Instructions)
				}
			}
		})
	}
	// Not to the operator itself, as a project does not send to itself.
	if _, errs, code := run(t, "send", "operator", "To me", "--agent", "--from", "operator"); code != 1 || !strings.Contains(errs, "operator is you, the operator, who sends this task") {
		t.Errorf("send to the operator as the operator: exit %d, %q", code, errs)
	}
}

// A register stopped after it made the folder's agent and before it kept
// the token (kill -9, a session hook's timeout) left the name taken "by a
// project folder registered on another computer": the next register of the
// folder takes that never-used agent with a new token. One whose token was
// used, or made by hand, keeps the name taken.
func TestRegisterTakesTheAgentAStoppedRegisterLeft(t *testing.T) {
	e := newEveryday(t)
	api := e.folder(t, "api")
	in := relay.CreateAgentInput{Slug: "api", DisplayName: "api", ModelSlug: "live-session",
		Capabilities: []string{"text-input"}, Details: "Sessions in the project folder “api” (crosschat-relay register)."}
	left, err := e.r.Services.Agents.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, append([]string{"register", api}, e.loc...)...)
	if code != 0 || out != "api\n" {
		t.Fatalf("register after a stopped one: exit %d, %q %q", code, out, errs)
	}
	ps := storedProjects(t, e.store)
	if len(ps) != 1 || ps[0].ID != "api" || ps[0].Token == "" || ps[0].Token == left.Token {
		t.Fatalf("store: %+v", ps)
	}
	if err := whoami(e, ps[0].Token); err != nil {
		t.Errorf("the kept token does not work: %v", err)
	}

	// Used: a session's call with its token was seen, so it is someone's.
	web := e.folder(t, "web")
	in.Slug, in.DisplayName, in.Details = "web", "web", "Sessions in the project folder “web” (crosschat-relay register)."
	used, err := e.r.Services.Agents.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // times are kept to the millisecond
	if err := client.NewAgent(e.r.Config().BaseURL(), used.Token, "").Tool(context.Background(), "heartbeat", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, append([]string{"register", web}, e.loc...)...); code == 0 || !strings.Contains(errs, "is taken") {
		t.Errorf("register where the agent's token was used: exit %d, %q", code, errs)
	}
}

// whoami calls the MCP tool whoami on e's relay with token.
func whoami(e *everyday, token string) error {
	return client.NewAgent(e.r.Config().BaseURL(), token, "").Tool(context.Background(), "whoami", nil, nil)
}

// register against something that takes the connection and never answers
// says so, not a bare "context deadline exceeded" of an HTTP request.
func TestRegisterAtASilentAddress(t *testing.T) {
	e := newEveryday(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 64)
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case held <- c: // held open, unanswered, until the test ends
			default:
				c.Close()
			}
		}
	}()
	cli.SetRegisterWait(t, 500*time.Millisecond)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_, errs, code := run(t, "register", e.folder(t, "api"), "--port", port, "--data-dir", e.r.Config().DataDir)
	if code == 0 || !strings.Contains(errs, "but not as a relay within 500ms") {
		t.Fatalf("register at a silent address: exit %d, %q", code, errs)
	}
}

// Verbs find the relay serving the data folder where its run file says it
// listens when neither a flag nor the environment names an address: a
// relay started with --port elsewhere was "not running at
// http://127.0.0.1:4318" for every verb but status (a newcomer's walk).
func TestVerbsFindTheRelayByItsRunFile(t *testing.T) {
	e := newEveryday(t)
	t.Setenv("CROSSCHAT_PORT", "")
	t.Setenv("CROSSCHAT_HOST", "")
	out, errs, code := run(t, "agents", "list", "--data-dir", e.r.Config().DataDir)
	if code != 0 || !strings.Contains(out, "operator") {
		t.Fatalf("agents list without an address: exit %d, %q %q", code, out, errs)
	}
	// An address given still wins.
	if _, errs, code := run(t, "agents", "list", "--data-dir", e.r.Config().DataDir, "--port", "1"); code == 0 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("agents list --port 1: exit %d, %q", code, errs)
	}
}

// The hint after an id clash works as printed: a command that names the
// folder it is for, run from anywhere (a newcomer ran it from another
// folder and registered that one), or, for a folder whose name a shell
// would read (anyone may choose it: no quoting is safe in every shell, and
// pasted a $(…) in it ran), the command alone, to run in that folder; sh
// splits the printed words and nothing in the name runs.
func TestIDClashHintNamesTheFolder(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to read the hint as a shell does")
	}
	e := newEveryday(t)
	e.register(t, e.folder(t, "api"))
	elsewhere := e.folder(t, "elsewhere")
	pwned := filepath.Join(e.root, "pwned")
	for _, tc := range []struct {
		name, folder string
		inFolder     bool // the hint is run in the folder, not from elsewhere
	}{
		{"a plain name", "web", false},
		{"a name a shell reads", "my web's \\'$(touch " + pwned + ")", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := e.folder(t, tc.folder)
			t.Chdir(elsewhere)
			_, errs, code := run(t, "register", web, "--id", "api")
			_, hint, ok := strings.Cut(errs, "give "+web+" its own id: ")
			hint, _, _ = strings.Cut(hint, " (or set")
			if tc.inFolder {
				hint, ok = strings.CutPrefix(hint, "run `")
				hint, _, _ = strings.Cut(hint, "` in that folder")
				t.Chdir(web)
			}
			if code == 0 || !ok || !strings.HasPrefix(hint, "crosschat-relay register --id ") || tc.inFolder == strings.Contains(hint, web) {
				t.Fatalf("register --id api on another folder: exit %d, %q", code, errs)
			}
			words, err := exec.Command(sh, "-c", "printf '%s\\n' "+strings.TrimPrefix(hint, "crosschat-relay ")).Output()
			noErr(t, err)
			if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("pasting the hint %q ran what the folder's name holds", hint)
			}
			args := strings.Split(strings.TrimSuffix(string(words), "\n"), "\n")
			if _, errs, code := run(t, args...); code != 0 {
				t.Fatalf("the hint %q as printed: exit %d, %q", hint, code, errs)
			}
			ps := storedProjects(t, e.store)
			if i := slices.IndexFunc(ps, func(p struct{ ID, Dir, Relay, Token string }) bool { return p.ID == args[2] }); i < 0 || !project.SameDir(ps[i].Dir, web) {
				t.Fatalf("the hint %q registered %+v", hint, ps)
			}
		})
	}
}
