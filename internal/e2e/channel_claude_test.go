//go:build unix

package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/e2e"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// tmuxSession drives one interactive program in a private tmux server.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

// screen is the visible pane.
func (s *tmuxSession) screen() string {
	out, _ := s.run("capture-pane", "-p", "-t", "main")
	return out
}

// TestClaudeChannelLive starts the real Claude Code CLI, interactive in
// tmux, against the fake model, with `crosschat-relay channel` loaded from
// the project's .mcp.json. Another agent posts a task; nobody types; the
// model's next request carries the task as a <channel source="crosschat">
// event. On Claude Code 2.1.332 this needs the channel to offer only the
// legacy MCP protocol (internal/mcp ChannelProtocolVersions): its MCP log
// then says "Channel notifications registered", which the test waits for.
func TestClaudeChannelLive(t *testing.T) {
	claude, version := claudeInTmux(t)

	root := newRoot(t)
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{filepath.Join(home, ".claude"), proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := t.TempDir()
	p := startProcess(t, dataDir)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	fm, err := e2e.StartFakeModel(e2e.Anthropic, e2e.Script{Marker: "channel", Workdir: proj, File: "NOTES.md", HandOffTo: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer fm.Close()

	// The project's .mcp.json: the channel server as Claude Code starts it.
	// --after 0 delivers from the first event, so a task posted while the
	// session starts up is not missed.
	writeJSONFile(t, filepath.Join(proj, ".mcp.json"), map[string]any{"mcpServers": map[string]any{"crosschat": map[string]any{
		"command": relayBinary(t), "args": []string{"channel", "--after", "0"},
		"env": map[string]string{"CROSSCHAT_TOKEN": bob.token, "CROSSCHAT_URL": p.url},
	}}})
	// First-run screens seeded away (see docs/live-sessions.md and the
	// reference notes): onboarding, API key approval, project trust, the
	// project's MCP server, and the channel feature flag's offline value.
	const apiKey = "sk-ant-mock-channel-test-0123456789abcdef"
	writeJSONFile(t, filepath.Join(home, ".claude.json"), map[string]any{
		"hasCompletedOnboarding":   true,
		"lastOnboardingVersion":    version,
		"theme":                    "dark",
		"customApiKeyResponses":    map[string]any{"approved": []string{apiKey[len(apiKey)-20:]}, "rejected": []string{}},
		"cachedGrowthBookFeatures": map[string]any{"tengu_harbor": true},
		"projects": map[string]any{proj: map[string]any{
			"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true,
			"enabledMcpjsonServers": []string{"crosschat"}, "allowedTools": []string{},
		}},
	})
	// The relay's tools and Write run without a permission prompt, so the
	// model's turn (a hand-off to alice through the channel, a file) ends
	// by itself and the next channel event starts a new one.
	writeJSONFile(t, filepath.Join(home, ".claude", "settings.json"), map[string]any{"enableAllProjectMcpServers": true,
		"permissions": map[string]any{"allow": []string{"mcp__crosschat", "Write"}}})

	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + fm.URL(), "ANTHROPIC_API_KEY=" + apiKey, "DISABLE_AUTOUPDATER=1",
		// Everything but loopback goes to a closed port: the CLI stays offline.
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("crosschat-e2e-%d", os.Getpid())}
	cmd := append([]string{"new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", proj, "env", "-i"}, env...)
	cmd = append(cmd, claude, "--dangerously-load-development-channels", "server:crosschat")
	if out, err := s.run(cmd...); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	pidText, _ := s.run("display-message", "-p", "-t", "main", "#{pane_pid}")
	pid, _ := strconv.Atoi(strings.TrimSpace(pidText))
	// Runs before newRoot's cleanup: Claude Code writes into its home while
	// it exits, so wait for it to be gone before the folder is removed.
	t.Cleanup(func() {
		s.run("kill-server")
		for end := time.Now().Add(15 * time.Second); pid > 0 && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if syscall.Kill(pid, 0) != nil {
				return
			}
		}
	})
	dump := func() string {
		seen := fm.Seen()
		return fmt.Sprintf("screen:\n%s\nmodel requests: %v\nproblems: %v", s.screen(), seen.Requests, seen.Problems)
	}

	// The one screen that cannot be seeded: the development-channels warning.
	waitFor(t, "the development channels warning", func() bool {
		return strings.Contains(strings.ToLower(s.screen()), "development channel")
	}, dump)
	if out, err := s.run("send-keys", "-t", "main", "Enter"); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	// The session is up once the warning is gone and the prompt waits for
	// input (an empty "❯" line). Not the word "crosschat": the project's
	// folder, shown in the header, holds it from the first screen; and
	// 2.1.332 folds the channel notice away behind its auto-mode notice.
	waitFor(t, "the session to start", func() bool {
		sc := s.screen()
		return !strings.Contains(strings.ToLower(sc), "loading development channels") && emptyPrompt(sc)
	}, dump)
	// And once Claude Code connected the channel server (its MCP log says so).
	waitFor(t, "Claude Code to register the channel", func() bool {
		logs, _ := filepath.Glob(filepath.Join(home, ".cache", "claude-cli-nodejs", "*", "mcp-logs-crosschat", "*"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); strings.Contains(string(b), "Channel notifications registered") {
				return true
			}
		}
		return false
	}, dump)

	// Alice posts a task to bob. Nobody types.
	c := bench.NewClient(p.url, 1)
	defer c.Close()
	var task relay.Task
	if err := c.Tool(t.Context(), alice.token, "post_task", map[string]any{"recipientSlug": "bob", "title": "Summarize the release notes", "instructions": "Three bullet points, please.", "priority": 3}, &task); err != nil {
		t.Fatal(err)
	}
	body := waitChannelEvent(t, fm, dump, func(body string) bool {
		return strings.Contains(body, task.ID) && strings.Contains(body, "Summarize the release notes") && strings.Contains(body, "Three bullet points")
	})
	t.Logf("the model received the channel event:\n%s", excerpt(body, "<channel source=", 400))

	// The model hands work to alice through the channel: the relay knows
	// the session it came from by the id Claude Code gave the channel
	// (CLAUDE_CODE_SESSION_ID), the id of the session's transcript.
	var asked claimAnswer
	waitFor(t, "the session's hand-off to alice", func() bool {
		err := c.Tool(t.Context(), alice.token, "claim_next_task", map[string]any{}, &asked)
		return err == nil && asked.Task != nil
	}, dump)
	transcripts, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("want one session transcript, found %v", transcripts)
	}
	session := strings.TrimSuffix(filepath.Base(transcripts[0]), ".jsonl")
	if asked.Task.SenderSlug != "bob" || asked.Task.ReplySession != session {
		t.Fatalf("the hand-off from the session: sender %s, replySession %q; want bob, the session's id %s", asked.Task.SenderSlug, asked.Task.ReplySession, session)
	}
	// Alice answers: the answer reaches that session, as its next turn.
	if err := c.Tool(t.Context(), alice.token, "report_task", map[string]any{"taskId": asked.Task.ID, "kind": "completed", "message": "Reviewed.", "result": "Looks right."}, nil); err != nil {
		t.Fatal(err)
	}
	body = waitChannelEvent(t, fm, dump, func(body string) bool {
		return strings.Contains(body, asked.Task.ID) && strings.Contains(body, `kind=\"task-completed\"`)
	})
	t.Logf("session %s received the answer:\n%s", session, excerpt(body, `kind=\"task-completed\"`, 300))
}

// waitChannelEvent waits up to 90 s for a model request carrying a
// crosschat channel event that match accepts, and returns its body.
func waitChannelEvent(t *testing.T, fm *e2e.FakeModel, dump func() string, match func(body string) bool) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, body := range fm.Seen().ChannelBodies {
			if strings.Contains(body, `<channel source=\"crosschat\"`) && match(body) {
				return body
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no model request carried the channel event within 90 s\n%s\nchannel bodies: %d", dump(), len(fm.Seen().ChannelBodies))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// emptyPrompt reports whether the screen shows Claude Code's input prompt
// with nothing typed: a line that is just "❯".
func emptyPrompt(screen string) bool {
	for _, line := range strings.Split(screen, "\n") {
		if strings.TrimSpace(line) == "❯" {
			return true
		}
	}
	return false
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// excerpt returns up to n bytes of s from the first occurrence of mark.
func excerpt(s, mark string, n int) string {
	i := strings.Index(s, mark)
	if i < 0 {
		return ""
	}
	return s[i:min(len(s), i+n)]
}

// claudeInTmux is the Claude Code of the lane under test and its version,
// for a test that drives it interactive in tmux (skipped without tmux).
func claudeInTmux(t *testing.T) (claude, version string) {
	t.Helper()
	dir := cliFolder(t, "claude")
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	claude = filepath.Join(dir, "claude")
	ver, err := exec.Command(claude, "--version").Output()
	if err != nil {
		t.Fatalf("claude --version: %v", err)
	}
	version, _, _ = strings.Cut(strings.TrimSpace(string(ver)), " ")
	return claude, version
}
