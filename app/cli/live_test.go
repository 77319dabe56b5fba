package cli_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// agents add prints the live-session setup: the channel's .mcp.json entry
// with the new token, and the monitor command.
func TestAgentsAddShowsLiveSetup(t *testing.T) {
	r := startRelay(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	out, errs, code := run(t, "agents", "add", "live-agent", "--name", "Live", "--model", "m", "--capability", "text-input",
		"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir)
	if code != 0 {
		t.Fatalf("agents add: %d %s", code, errs)
	}
	_, rest, ok := strings.Cut(out, "Token (shown once): ")
	token, _, _ := strings.Cut(rest, "\n")
	if !ok || !strings.HasPrefix(token, relay.AgentTokenPrefix) {
		t.Fatalf("no token in %s", out)
	}
	for _, want := range []string{"--dangerously-load-development-channels server:crosschat", `"channel"`, `"CROSSCHAT_TOKEN": "` + token + `"`, "crosschat-relay monitor"} {
		if !strings.Contains(out, want) {
			t.Errorf("agents add output lacks %q:\n%s", want, out)
		}
	}
	// The whole .mcp.json (its shape is TestSetupTexts' in internal/web), then the start command.
	base := r.Config().BaseURL()
	if !strings.Contains(out, "\n  "+strings.ReplaceAll(web.ChannelMCPJSON(token, base), "\n", "\n  ")+"\n") {
		t.Errorf("agents add output lacks the channel's .mcp.json for %s:\n%s", base, out)
	}
	if !strings.Contains(out, "\n  "+web.ChannelStartCommand+"\n") {
		t.Errorf("agents add output lacks the start command on its own line:\n%s", out)
	}
	// The JSON clients' entry, as printed, is one an .mcp.json takes:
	// Claude Code skips an entry with neither type nor command.
	_, block, _ := strings.Cut(out, "\nJSON clients:\n")
	block, _, _ = strings.Cut(block, "\n\n")
	var js struct {
		MCPServers map[string]struct{ Type, URL string } `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &js); err != nil || js.MCPServers["crosschat"].Type != "http" || js.MCPServers["crosschat"].URL != base+"/mcp" {
		t.Errorf("the JSON clients' entry %q (%v): want type http and url %s/mcp", block, err, base)
	}
}

func TestLiveVerbsRefuse(t *testing.T) {
	projectHome(t)
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"monitor without token", []string{"monitor", "--url", "http://127.0.0.1:1"}, 2, "CROSSCHAT_TOKEN"},
		{"channel without token", []string{"channel", "--url", "http://127.0.0.1:1"}, 2, "CROSSCHAT_TOKEN"},
		{"monitor bad format", []string{"monitor", "--format", "xml", "--url", "http://127.0.0.1:1"}, 2, "--format"},
		{"channel as admin", []string{"channel", "--agent", "x", "--url", "http://127.0.0.1:1"}, 2, "own token"},
		{"monitor bad state", []string{"monitor", "--token", "cca_x", "--state", "/dev/null/nope/x"}, 1, "--state"},
		{"monitor bad session", []string{"monitor", "--token", "cca_x", "--url", "http://127.0.0.1:1", "--session", "not an id"}, 2, "--session: a session id holds only"},
		{"send bad session", []string{"send", "web", "hello", "--session", "not an id"}, 2, "--session: a session id holds only"},
		{"channel bad session name", []string{"channel", "--token", "cca_x", "--url", "http://127.0.0.1:1", "--session", "s-1", "--session-name", "bad\x01name"}, 2, "--session-name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := run(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", code, errs, tc.code, tc.want)
			}
		})
	}
}

// monitor and channel given the name of an agent that is no project here
// say to follow it with --agent (they said only that no such project is
// registered); a name nobody has is said as before.
func TestLiveVerbsNameAnAgentsFlag(t *testing.T) {
	projectHome(t)
	r := startRelay(t)
	createAgent(t, r, "builder")
	t.Setenv("CROSSCHAT_TOKEN", "")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	for _, tc := range []struct {
		args      []string
		code      int
		want, not string
	}{
		{[]string{"monitor", "builder"}, 2, `"builder" is an agent of the relay, not a project registered on this computer: follow it with crosschat-relay monitor --agent builder`, ""},
		{[]string{"channel", "Builder"}, 2, "crosschat-relay channel --agent builder", ""},
		{[]string{"monitor", "nobody"}, 1, `no project "nobody" is registered`, "--agent"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errs, code := run(t, append(tc.args, loc...)...)
			if code != tc.code || !strings.Contains(errs, tc.want) || (tc.not != "" && strings.Contains(errs, tc.not)) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", code, errs, tc.code, tc.want)
			}
		})
	}
}

// MonitorLine is one line: the prefix and compact JSON, newlines escaped.
func TestMonitorLine(t *testing.T) {
	for _, tc := range []struct {
		e    relay.PushEvent
		want string
	}{
		{relay.PushEvent{Kind: "task", TaskID: "t1", Title: "Fix", From: "alice", Priority: 3, Message: "Line one\nline two"},
			`CROSSCHAT_TASK {"taskId":"t1","title":"Fix","sender":"alice","priority":3,"message":"Line one\nline two"}`},
		{relay.PushEvent{Kind: relay.EventTaskCompleted, TaskID: "t2", Title: "Build", From: "bob", Message: "bob: done"},
			`CROSSCHAT_UPDATE {"taskId":"t2","title":"Build","sender":"bob","kind":"task-completed","message":"bob: done"}`},
		{relay.PushEvent{Kind: "task", TaskID: "t3", Title: "Loop", From: "cat", Priority: 2, Message: "again", ConversationID: "c1"},
			`CROSSCHAT_TASK {"taskId":"t3","title":"Loop","sender":"cat","priority":2,"message":"again","conversationId":"c1"}`},
		{relay.PushEvent{Kind: relay.EventTaskBlocked, TaskID: "t4", Title: "Loop", From: "cat", Message: "cat: no", ConversationID: "c1"},
			`CROSSCHAT_UPDATE {"taskId":"t4","title":"Loop","sender":"cat","kind":"task-blocked","message":"cat: no","conversationId":"c1"}`},
	} {
		if got := cli.MonitorLine(tc.e); got != tc.want {
			t.Errorf("MonitorLine = %s\nwant %s", got, tc.want)
		}
	}
	long := cli.MonitorLine(relay.PushEvent{Kind: "task", Message: strings.Repeat("é", 5000)})
	if n := len([]rune(long)); n > 2200 || strings.Contains(long, "\n") {
		t.Errorf("long message: %d runes", n)
	}
}

func TestSessionsVerb(t *testing.T) {
	home, err := filepath.Abs(filepath.Join("..", "..", "internal", "session", "testdata", "home"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "sessions", "list", "--home", home)
	if code != 0 || !strings.Contains(out, "store refactor") || !strings.Contains(out, "(Changelog for 2.0 written)") || strings.Contains(out, "000000000007") {
		t.Fatalf("sessions list: %d\n%s%s", code, out, errs)
	}
	out, errs, code = run(t, "sessions", "show", "store refactor", "--home", home, "--json")
	if code != 0 || !strings.Contains(out, `"id": "7f3e0000-aaaa-4bbb-8ccc-000000000005"`) {
		t.Fatalf("sessions show: %d\n%s%s", code, out, errs)
	}
	_, errs, code = run(t, "sessions", "show", "release prep", "--home", home)
	if code != 1 || !strings.Contains(errs, "0b6c1d2e-1111-4a5b-8c9d-000000000001") || !strings.Contains(errs, "0b6c1d2e-3333-4a5b-8c9d-000000000003") {
		t.Fatalf("ambiguous name: %d %s", code, errs)
	}
	_, errs, code = run(t, "sessions", "show", "release", "--home", home)
	if code != 1 || !strings.Contains(errs, "Similar: “release prep”") {
		t.Fatalf("unknown name: %d %s", code, errs)
	}
}

// Ensure a monitor started after event 0 for an agent whose stream nobody
// opened before says why events may be missing in words that fit that
// case (none were written before the stream was first opened; nothing was
// trimmed), and prints the task posted after it connected.
func TestMonitorMissedNamesBothCauses(t *testing.T) {
	r := startRelay(t)
	// Another agent's stream has events: the relay has a history.
	ann := monitorAgent(t, r, "ann", "--format", "task")
	post := func(to string) string {
		task, err := r.Service().PostTask(t.Context(), relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: to, Title: "for " + to, Instructions: "x"})
		noErr(t, err)
		return task.ID
	}
	ann.await(t, post("ann"))

	bea := monitorAgent(t, r, "bea", "--after", "0")
	want := "crosschat-relay monitor: events after 0 may be missing (trimmed by the relay, or from before this agent's stream was first opened); call read_updates (and claim_next_task for queued tasks)\n"
	poll.Until(t, "the monitor's missed line", 10*time.Second, func() bool { return strings.Contains(bea.errb.String(), want) }, bea.dump)
	bea.await(t, post("bea"))
	if strings.Contains(bea.errb.String(), "trimmed events") || strings.Count(bea.errb.String(), "may be missing") != 1 {
		t.Fatalf("the missed line is wrong or repeated:\n%s", bea.dump())
	}
}

// monitorAgent creates the agent slug on r and runs `monitor` with its
// token and args until the test ends, once it has connected.
func monitorAgent(t *testing.T, r *app.Relay, slug string, args ...string) *runningMonitor {
	t.Helper()
	rev, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	return startMonitor(t, append([]string{"--token", rev.Token, "--url", r.Config().BaseURL()}, args...)...)
}

// Ensure monitor's location follows the CLI's rule that flags win over
// the environment: --url over --port, --port over CROSSCHAT_URL (a stale
// one in the shell does not beat the port typed), and CROSSCHAT_URL over
// CROSSCHAT_PORT. Each case has the dead address lose: a monitor that
// chose it would only retry, never connect.
func TestMonitorLocationFlagsWinOverEnv(t *testing.T) {
	r := startRelay(t)
	rev, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "dot", DisplayName: "Dot", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	live, port := r.Config().BaseURL(), strconv.Itoa(r.Config().Port)
	dead := testkit.FreePort(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"--url over --port", nil, []string{"--url", live, "--port", strconv.Itoa(dead)}},
		{"--port over CROSSCHAT_URL", map[string]string{"CROSSCHAT_URL": fmt.Sprintf("http://127.0.0.1:%d", dead)}, []string{"--port", port}},
		{"--port over CROSSCHAT_MCP_URL", map[string]string{"CROSSCHAT_MCP_URL": fmt.Sprintf("http://127.0.0.1:%d/mcp", dead)}, []string{"--port", port}},
		{"CROSSCHAT_URL over CROSSCHAT_PORT", map[string]string{"CROSSCHAT_URL": live, "CROSSCHAT_PORT": strconv.Itoa(dead)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CROSSCHAT_TOKEN", rev.Token)
			for _, k := range []string{"CROSSCHAT_URL", "CROSSCHAT_MCP_URL", "CROSSCHAT_PORT"} {
				t.Setenv(k, tc.env[k])
			}
			m := startMonitor(t, tc.args...)
			defer m.stop(t)
			if strings.Contains(m.errb.String(), strconv.Itoa(dead)) {
				t.Fatalf("the monitor tried the dead address:\n%s", m.dump())
			}
		})
	}
}

// Ensure a monitor whose token the relay does not know stops (exit 1) and
// says which token, where it came from, and what may have become of it
// (the relay's own answer names the header to send, which it did send).
func TestMonitorUnknownTokenSaid(t *testing.T) {
	r := startRelay(t)
	projectHome(t)
	t.Setenv("CROSSCHAT_TOKEN", relay.AgentTokenPrefix+"not-a-known-token")
	_, errs, code := run(t, "monitor", "--url", r.Config().BaseURL())
	want := "crosschat-relay: the relay at " + r.Config().BaseURL() + " does not know the token in CROSSCHAT_TOKEN: it was revoked or replaced, or belongs to another relay"
	if code != 1 || !strings.HasPrefix(errs, want) || strings.Contains(errs, "Bearer") {
		t.Fatalf("monitor with an unknown token: exit %d, %q\nwant: %s", code, errs, want)
	}
}

// Ensure invites create's values the relay refuses are usage errors of the
// flags as typed (exit 2, with the verb's usage), not of the relay's field
// names (maxUses, firstTask.instructions) with exit 1.
func TestInvitesCreateNamesTheFlag(t *testing.T) {
	r := startRelay(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--uses", "-1"}, "invites create: --uses must be 1..1000"},
		{[]string{"--first-task-title", "T"}, "invites create: --first-task-instructions is required"},
		{[]string{"--first-task-title", "T", "--first-task-instructions", "I", "--first-task-priority", "5"}, "invites create: --first-task-priority must be 1 (low), 2 (normal) or 3 (urgent)"},
	} {
		out, errs, code := run(t, append(append([]string{"invites", "create"}, tc.args...), loc...)...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "Usage:") || strings.Contains(errs, "maxUses") || strings.Contains(errs, "firstTask") {
			t.Errorf("invites create %v: exit %d, %q %q\nwant: %s", tc.args, code, out, errs, tc.want)
		}
	}
}

// send's --priority takes the words the dashboard shows, or their numbers,
// any case; nothing is normal; anything else is a usage error.
func TestParsePriority(t *testing.T) {
	for in, want := range map[string]int{"": 2, "low": 1, "LOW": 1, " normal ": 2, "urgent": 3, "1": 1, "2": 2, "3": 3} {
		if got, err := cli.ParsePriority(in); err != nil || got != want {
			t.Errorf("ParsePriority(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"high", "0", "4", "urgently", "1.0"} {
		if _, err := cli.ParsePriority(in); err == nil || !strings.Contains(err.Error(), "use low, normal or urgent") {
			t.Errorf("ParsePriority(%q): %v; want a usage error", in, err)
		}
	}
}
