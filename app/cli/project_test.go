package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// projectHome points the user's config folder (and HOME) at a fresh
// folder, so nothing touches the real user's project store, and clears the
// variables that name a token or a project. It returns the store's file.
func projectHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("APPDATA", filepath.Join(home, "AppData"))
	t.Setenv("CROSSCHAT_TOKEN", "")
	t.Setenv("CROSSCHAT_PROJECT_ID", "")
	t.Setenv("CROSSCHAT_URL", "")
	t.Setenv("CROSSCHAT_MCP_URL", "")
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "crosschat-relay", "projects.json")
}

// storedProjects reads the project store the CLI wrote.
func storedProjects(t *testing.T, path string) []struct{ ID, Dir, Relay, Token string } {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Projects []struct{ ID, Dir, Relay, Token string }
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return f.Projects
}

// register creates the project's agent once and keeps its token in the
// user's config folder (owner-only, nothing written in the project); a
// second run changes nothing and prints the same id; a second folder of the
// same name is refused naming the first and suggesting --id, and registers
// with --id; bad ids are refused before anything is written.
func TestRegisterIdempotentAndClash(t *testing.T) {
	storePath := projectHome(t)
	r := startRelay(t)
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	root := t.TempDir()
	first, second := filepath.Join(root, "team-a", "Billing_API"), filepath.Join(root, "team-b", "billing-api")
	for _, d := range []string{first, second} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Bad ids: refused, nothing written anywhere.
	for _, bad := range []string{"../api", "a/b", "x\x07y", strings.Repeat("z", 81), "!!!"} {
		_, errs, code := run(t, append([]string{"register", first, "--id", bad}, loc...)...)
		if code == 0 || !strings.Contains(errs, "refused") {
			t.Errorf("register --id %q: exit %d, %q", bad, code, errs)
		}
	}
	if _, err := os.Stat(storePath); !os.IsNotExist(err) {
		t.Fatalf("a refused id wrote the store: %v", err)
	}
	agentsBefore, err := r.Services.Agents.List()
	noErr(t, err)

	out, errs, code := run(t, append([]string{"register", first}, loc...)...)
	if code != 0 || out != "billing-api\n" {
		t.Fatalf("register: exit %d, %q %q", code, out, errs)
	}
	stored := storedProjects(t, storePath)
	if len(stored) != 1 || stored[0].ID != "billing-api" || stored[0].Dir != evalDir(t, first) || !strings.HasPrefix(stored[0].Token, relay.AgentTokenPrefix) {
		t.Fatalf("store after register: %+v", stored)
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{storePath: 0o600, filepath.Dir(storePath): 0o700} {
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v (%v)", path, st.Mode().Perm(), want, err)
			}
		}
	}
	if entries, _ := os.ReadDir(first); len(entries) != 0 {
		t.Errorf("register wrote into the project folder: %v", entries)
	}
	agents, err := r.Services.Agents.List()
	noErr(t, err)
	if len(agents) != len(agentsBefore)+1 || !hasAgent(agents, "billing-api") {
		t.Fatalf("agents after register: %+v", agents)
	}

	// Again: no-op, same id, same file, same agents.
	before, _ := os.ReadFile(storePath)
	out, errs, code = run(t, append([]string{"register", first}, loc...)...)
	after, _ := os.ReadFile(storePath)
	if code != 0 || out != "billing-api\n" || string(before) != string(after) {
		t.Fatalf("register again: exit %d, %q %q; store changed: %v", code, out, errs, string(before) != string(after))
	}
	again, err := r.Services.Agents.List()
	noErr(t, err)
	if len(again) != len(agents) {
		t.Fatalf("register again changed the agents: %d → %d", len(agents), len(again))
	}

	// The same name from another folder: refused, naming the first, suggesting --id.
	_, errs, code = run(t, append([]string{"register", second}, loc...)...)
	if code != 1 || !strings.Contains(errs, evalDir(t, first)) || !strings.Contains(errs, "--id") {
		t.Fatalf("same-name clash: exit %d, %q", code, errs)
	}
	if after2, _ := os.ReadFile(storePath); string(after2) != string(after) {
		t.Fatal("the refused clash changed the store")
	}
	// With its own id it registers.
	out, errs, code = run(t, append([]string{"register", second, "--id", "Billing API (team b)"}, loc...)...)
	if code != 0 || out != "billing-api-team-b\n" {
		t.Fatalf("register --id: exit %d, %q %q", code, out, errs)
	}
	// And without --id again, that folder keeps the id it was given.
	out, _, code = run(t, append([]string{"register", second}, loc...)...)
	if code != 0 || out != "billing-api-team-b\n" {
		t.Fatalf("register again without --id: exit %d, %q", code, out)
	}
	// The same relay reached by another name: the same project, its address updated.
	out, errs, code = run(t, "register", first, "--host", "localhost", "--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir)
	if code != 0 || out != "billing-api\n" {
		t.Fatalf("register through localhost: exit %d, %q %q", code, out, errs)
	}
	if ps := storedProjects(t, storePath); ps[0].ID != "billing-api" || !strings.Contains(ps[0].Relay, "localhost") || ps[0].Token != stored[0].Token {
		t.Fatalf("store after register through localhost: %+v", ps)
	}
	// A token replaced on the relay is not silently taken back.
	_, err = r.Services.Agents.RotateToken("billing-api")
	noErr(t, err)
	_, errs, code = run(t, append([]string{"register", first}, loc...)...)
	if code != 1 || !strings.Contains(errs, "not with the token kept") {
		t.Fatalf("register after the token was replaced: exit %d, %q", code, errs)
	}
	// An agent of that name made by hand is not taken over.
	createAgent(t, r, "handmade")
	hand := filepath.Join(root, "handmade")
	noErr(t, os.Mkdir(hand, 0o755))
	_, errs, code = run(t, append([]string{"register", hand}, loc...)...)
	if code != 1 || !strings.Contains(errs, `the name "handmade" is taken`) || !strings.Contains(errs, "agents add") || !strings.Contains(errs, "--id") {
		t.Fatalf("register over a hand-made agent: exit %d, %q", code, errs)
	}
}

func hasAgent(agents []relay.Agent, slug string) bool {
	for _, a := range agents {
		if a.Slug == slug && a.HasToken {
			return true
		}
	}
	return false
}

// evalDir is dir as register stores it (symbolic links resolved).
func evalDir(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// monitor and channel take the token from CROSSCHAT_TOKEN or the project
// registered for the working folder; --token still works, with a warning on
// stderr; with none of them the error names the variable and register.
func TestLiveTokenSources(t *testing.T) {
	projectHome(t)
	r := startRelay(t)
	url := r.Config().BaseURL()
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	const warning = "--token puts the token in the process list"

	// A token the relay refuses ends monitor with exit 1, so each source
	// shows which token was used without a stream left running.
	_, errs, code := run(t, "monitor", "--token", "cca_refused", "--url", url)
	if code != 1 || !strings.Contains(errs, warning) {
		t.Fatalf("--token: exit %d, %q", code, errs)
	}
	t.Setenv("CROSSCHAT_TOKEN", "cca_refused")
	_, errs, code = run(t, "monitor", "--url", url)
	if code != 1 || strings.Contains(errs, warning) {
		t.Fatalf("CROSSCHAT_TOKEN: exit %d, %q", code, errs)
	}
	t.Setenv("CROSSCHAT_TOKEN", "")

	proj := t.TempDir()
	t.Chdir(proj)
	for _, verb := range []string{"monitor", "channel"} {
		_, errs, code = run(t, verb, "--url", url)
		if code != 2 || !strings.Contains(errs, "CROSSCHAT_TOKEN") || !strings.Contains(errs, "crosschat-relay register") || strings.Contains(errs, warning) {
			t.Fatalf("%s in an unregistered folder: exit %d, %q", verb, code, errs)
		}
	}
	out, errs, code := run(t, append([]string{"register"}, loc...)...)
	if code != 0 {
		t.Fatalf("register: %d %s", code, errs)
	}
	id := strings.TrimSpace(out)
	// The project's token is used: once the operator revokes it, the relay
	// refuses the monitor (exit 1), not the command line (exit 2).
	_, err := r.Services.Agents.RevokeToken(id)
	noErr(t, err)
	sub := filepath.Join(proj, "internal", "x")
	noErr(t, os.MkdirAll(sub, 0o755))
	t.Chdir(sub)
	for _, verb := range []string{"monitor", "channel"} {
		_, errs, code = run(t, verb, "--url", url)
		if code != 1 || strings.Contains(errs, warning) {
			t.Fatalf("%s in a registered project's subfolder: exit %d, %q", verb, code, errs)
		}
	}
	// CROSSCHAT_PROJECT_ID names the project from anywhere.
	t.Chdir(t.TempDir())
	t.Setenv("CROSSCHAT_PROJECT_ID", id)
	_, errs, code = run(t, "monitor", "--url", url)
	if code != 1 {
		t.Fatalf("monitor with %s: exit %d, %q", "CROSSCHAT_PROJECT_ID", code, errs)
	}
}

// MessageLine is the crosschat line: from (and seed 003's
// source_project_id), to, text, taskId, kind, verification (the signature
// mark of a task from another relay, "authenticated" for a local one); an
// update adds the result of a completion (its first lines), the session the
// answer is for, and the conversation with its hop count.
func TestMessageLine(t *testing.T) {
	long := strings.Repeat("line\n", 30)
	for _, tc := range []struct {
		e    relay.PushEvent
		want string
	}{
		{relay.PushEvent{Agent: "web", Kind: "task", TaskID: "t1", Title: "Rebase on main,", From: "api", Priority: 3, Message: "Rebase on main,\nthen push."},
			`CROSSCHAT_MESSAGE {"from":"api","source_project_id":"api","to":"web","text":"Rebase on main,\nthen push.","taskId":"t1","kind":"task","verification":"authenticated"}`},
		{relay.PushEvent{Agent: "web", Kind: "task", TaskID: "t5", Title: "A long first line th…", From: "api", Message: "A long first line that send shortened\nMore."},
			`CROSSCHAT_MESSAGE {"from":"api","source_project_id":"api","to":"web","text":"A long first line that send shortened\nMore.","taskId":"t5","kind":"task","verification":"authenticated"}`},
		{relay.PushEvent{Agent: "web", Kind: "task", TaskID: "t2", Title: "Review", From: "api", Message: "The parser.", ConversationID: "c0", Hops: 0},
			`CROSSCHAT_MESSAGE {"from":"api","source_project_id":"api","to":"web","text":"Review\n\nThe parser.","taskId":"t2","kind":"task","verification":"authenticated","conversationId":"c0","hops":0}`},
		{relay.PushEvent{Agent: "api", Kind: relay.EventTaskCompleted, TaskID: "t1", Title: "Rebase", From: "web", Message: "web: done", Result: "Rebased onto 4f2c.\nTests pass.",
			ReplySession: "s-7", ConversationID: "c1", Hops: 2},
			`CROSSCHAT_MESSAGE {"from":"web","source_project_id":"web","to":"api","text":"web: done","taskId":"t1","kind":"task-completed","verification":"authenticated","result":"Rebased onto 4f2c.\nTests pass.","replySession":"s-7","conversationId":"c1","hops":2}`},
		{relay.PushEvent{Agent: "api", Kind: relay.EventTaskCompleted, TaskID: "t6", From: "web", Message: "web: done", Result: long},
			`CROSSCHAT_MESSAGE {"from":"web","source_project_id":"web","to":"api","text":"web: done","taskId":"t6","kind":"task-completed","verification":"authenticated","result":"` + strings.Repeat("line\\n", 19) + `line\n…"}`},
		{relay.PushEvent{Agent: "web", Kind: "task", TaskID: "t3", Title: "Hi", From: "operator@relay-b", Message: "Hi there", Signature: relay.MarkVerified},
			`CROSSCHAT_MESSAGE {"from":"operator@relay-b","source_project_id":"operator@relay-b","to":"web","text":"Hi\n\nHi there","taskId":"t3","kind":"task","verification":"verified"}`},
		{relay.PushEvent{Agent: "web", Kind: "task", TaskID: "t4", Title: "Esc", From: "x", Message: "Esc\x1b[2J\r"},
			`CROSSCHAT_MESSAGE {"from":"x","source_project_id":"x","to":"web","text":"Esc\n\nEsc\u001b[2J","taskId":"t4","kind":"task","verification":"authenticated"}`},
	} {
		if got := cli.MessageLine(tc.e); got != tc.want {
			t.Errorf("MessageLine = %s\nwant %s", got, tc.want)
		}
	}
}
