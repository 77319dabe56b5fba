package worker

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func TestChildEnv(t *testing.T) {
	relayEnv := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp", "XDG_CONFIG_HOME=/home/u/.config",
		"AWS_SECRET_ACCESS_KEY=s3cr3t", "SSH_AUTH_SOCK=/tmp/agent", "ANTHROPIC_API_KEY=sk-ant",
		"HTTPS_PROXY=http://user:pw@proxy:8080", "HTTP_PROXY=http://proxy:8080", "no_proxy=localhost",
		"CLAUDE_CONFIG_DIR=/home/u/.claude", "NODE_EXTRA_CA_CERTS=/etc/ca.pem", "ELECTRON_RUN_AS_NODE=1",
		"MY_TOOL_TOKEN=abc", "CROSSCHAT_TOKEN=from-relay",
	}
	tests := []struct {
		name         string
		env          []string
		named        []string
		run, preset  map[string]string
		goos         string
		want         []string // present exactly
		absent       []string // names absent
		wantWithheld []string
	}{
		{
			name: "baseline only",
			env:  relayEnv, goos: "linux",
			want: []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp", "XDG_CONFIG_HOME=/home/u/.config",
				"HTTP_PROXY=http://proxy:8080", "no_proxy=localhost", "CLAUDE_CONFIG_DIR=/home/u/.claude", "NODE_EXTRA_CA_CERTS=/etc/ca.pem"},
			absent: []string{"AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "ANTHROPIC_API_KEY", "HTTPS_PROXY", "ELECTRON_RUN_AS_NODE", "MY_TOOL_TOKEN", "CROSSCHAT_TOKEN"},
			wantWithheld: []string{"ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "CROSSCHAT_TOKEN", "ELECTRON_RUN_AS_NODE",
				"HTTPS_PROXY", "MY_TOOL_TOKEN", "SSH_AUTH_SOCK"},
		},
		{
			name: "named, preset and run variables",
			env:  relayEnv, goos: "linux",
			named:  []string{"MY_TOOL_TOKEN", "HTTPS_PROXY", "ELECTRON_RUN_AS_NODE", "NOT_SET"},
			preset: map[string]string{"DEEPSEEK_MCP_CONFIG": "/run/x.json", "HOME": "/preset"},
			run:    map[string]string{"CROSSCHAT_TOKEN": "ccr_run", "CROSSCHAT_AGENT": "builder"},
			want: []string{"MY_TOOL_TOKEN=abc", "HTTPS_PROXY=http://user:pw@proxy:8080", "DEEPSEEK_MCP_CONFIG=/run/x.json",
				"HOME=/preset", "CROSSCHAT_TOKEN=ccr_run", "CROSSCHAT_AGENT=builder"},
			absent:       []string{"ELECTRON_RUN_AS_NODE", "NOT_SET", "AWS_SECRET_ACCESS_KEY"},
			wantWithheld: []string{"ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "ELECTRON_RUN_AS_NODE", "SSH_AUTH_SOCK"},
		},
		{
			name: "windows names ignore case",
			env:  []string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "USERPROFILE=C:\\Users\\u", "APPDATA=C:\\a", "GITHUB_TOKEN=x", "https_proxy=http://u@p"},
			goos: "windows", named: []string{"github_token"},
			want:         []string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "USERPROFILE=C:\\Users\\u", "APPDATA=C:\\a", "GITHUB_TOKEN=x"},
			absent:       []string{"https_proxy"},
			wantWithheld: []string{"https_proxy"},
		},
		{
			name: "windows variables are not baseline elsewhere",
			env:  []string{"SystemRoot=C:\\Windows", "PATH=/bin"}, goos: "darwin",
			want: []string{"PATH=/bin"}, absent: []string{"SystemRoot"}, wantWithheld: []string{"SystemRoot"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := relay.WorkerConfig{Env: tt.named}
			env, withheld := ChildEnv(tt.env, cfg, tt.run, tt.preset, tt.goos)
			for _, w := range tt.want {
				if !slices.Contains(env, w) {
					t.Errorf("env lacks %q: %v", w, env)
				}
			}
			for _, name := range tt.absent {
				for _, kv := range env {
					if strings.HasPrefix(kv, name+"=") {
						t.Errorf("env has %q", kv)
					}
				}
			}
			if !reflect.DeepEqual(withheld, tt.wantWithheld) {
				t.Errorf("withheld = %v, want %v", withheld, tt.wantWithheld)
			}
			if !slices.IsSorted(env) {
				t.Errorf("env not sorted: %v", env)
			}
		})
	}
}

// Ensure a run's NO_PROXY names the relay's host beside whatever the
// relay's own NO_PROXY (or no_proxy) holds: a working folder's
// .gemini/.env sets HTTPS_PROXY for Gemini where the run has none, and its
// proxy was sent the run's token on the way to the relay (a hostile review).
func TestNoProxyNamesTheRelay(t *testing.T) {
	const mcp = "http://127.0.0.1:4318/mcp"
	for _, tc := range []struct {
		env  []string
		url  string
		want string
	}{
		{nil, mcp, "127.0.0.1"},
		{[]string{"NO_PROXY=corp.example"}, mcp, "corp.example,127.0.0.1"},
		{[]string{"no_proxy=corp.example"}, mcp, "corp.example,127.0.0.1"},
		{[]string{"no_proxy=low.example", "NO_PROXY=up.example"}, mcp, "up.example,127.0.0.1"},
		{[]string{"NO_PROXY=localhost, 127.0.0.1"}, mcp, "localhost, 127.0.0.1"},
		{nil, "http://[::1]:4318/mcp", "::1"},
		{nil, "http://relay.example.internal:4318/mcp", "relay.example.internal"},
		{[]string{"NO_PROXY=corp.example"}, "not a url", "corp.example"},
	} {
		if got := noProxy(tc.env, tc.url); got != tc.want {
			t.Errorf("noProxy(%q, %q) = %q, want %q", tc.env, tc.url, got, tc.want)
		}
	}
}

func TestAuthHint(t *testing.T) {
	withheld := []string{"ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "CODEX_SANDBOX", "GOOGLE_API_KEY", "OPENAI_API_KEY"}
	tests := []struct {
		harness string
		want    []string
	}{
		{"claude-code", []string{"ANTHROPIC_API_KEY"}},
		{"codex", []string{"CODEX_SANDBOX", "OPENAI_API_KEY"}},
		{"gemini", []string{"GOOGLE_API_KEY"}},
		{"custom", []string{"ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"}},
		{"codewhale", nil},
	}
	for _, tt := range tests {
		t.Run(tt.harness, func(t *testing.T) {
			got := AuthHint(tt.harness, withheld)
			if len(tt.want) == 0 {
				if got != "" {
					t.Fatalf("hint %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, strings.Join(tt.want, ", ")+", which") || strings.Contains(got, "AWS_SECRET") {
				t.Fatalf("hint %q, want %v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	long := strings.Repeat("x", 40000)
	tests := []struct {
		name    string
		in      decideInput
		kind    string
		message string // exact, or prefix when it ends with "…"
		result  string
	}{
		{"completed", decideInput{answer: "\n\n  First line\nmore"}, relay.ReportCompleted, "First line", "First line\nmore"},
		{"blocked", decideInput{answer: "  blocked: need a key\nplease"}, relay.ReportBlocked, "need a key\nplease", ""},
		{"blocked empty", decideInput{answer: "BLOCKED:"}, relay.ReportBlocked, "The agent is blocked.", ""},
		{"timeout", decideInput{name: "Codex", timedOut: true, timeoutMinutes: 30, stdout: "last words", exitCode: -1},
			relay.ReportBlocked, "The Codex worker stopped this task after 30 minutes without finishing.\n\nLast output:\nlast words", ""},
		{"exit code uses stderr", decideInput{name: "harness", exitCode: 3, stderr: "boom", answer: "partial"},
			relay.ReportBlocked, "Harness exited with code 3 before finishing.\n\nLast output:\nboom", ""},
		{"exit code falls back to the answer", decideInput{name: "harness", exitCode: 2, answer: "partial"},
			relay.ReportBlocked, "Harness exited with code 2 before finishing.\n\nLast output:\npartial", ""},
		{"the CLI's own error", decideInput{name: "Claude Code", exitCode: 1, answer: "Not logged in · Please run /login", failure: "Not logged in · Please run /login"},
			relay.ReportBlocked, "Claude Code failed without answering this task: Not logged in · Please run /login (it exited with code 1)", ""},
		{"the CLI's own error beats an answer and a zero exit", decideInput{name: "Codex", answer: "Half an answer", failure: "Quota exceeded.", authHint: "Pass OPENAI_API_KEY."},
			relay.ReportBlocked, "Codex failed without answering this task: Quota exceeded.\n\nPass OPENAI_API_KEY.", ""},
		{"empty answer with hint", decideInput{name: "Claude Code", authHint: "Pass ANTHROPIC_API_KEY."},
			relay.ReportBlocked, "Claude Code finished but gave no answer.\n\nPass ANTHROPIC_API_KEY.", ""},
		{"long result", decideInput{answer: long}, relay.ReportCompleted, strings.Repeat("x", 299) + "…",
			strings.Repeat("x", 39000) + "\n\n[Output shortened by the worker.]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.in)
			if got.kind != tt.kind || got.message != tt.message || got.result != tt.result {
				t.Fatalf("decide = %+v\nwant kind %s message %q result len %d", got, tt.kind, tt.message, len(tt.result))
			}
		})
	}
	// The tail is the last 1,500 characters.
	got := decide(decideInput{name: "x", exitCode: 1, stderr: strings.Repeat("a", 2000) + strings.Repeat("b", 1500)})
	if !strings.HasSuffix(got.message, "Last output:\n"+strings.Repeat("b", 1500)) {
		t.Fatalf("tail: %q", got.message[:80])
	}
}

// appendOnly is a Relay that only records activity.
type appendOnly struct {
	Relay
	mu      sync.Mutex
	batches [][]relay.ActivityEntry
}

func (a *appendOnly) AppendActivity(_ context.Context, _ string, entries []relay.ActivityEntry) ([]relay.ActivityEntry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.batches = append(a.batches, entries)
	return entries, nil
}

func (a *appendOnly) all() []relay.ActivityEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []relay.ActivityEntry
	for _, b := range a.batches {
		out = append(out, b...)
	}
	return out
}

// Ensures 2,000 steps yield 1,500 entries plus the end, the last step
// entry saying later ones are not shown.
func TestRecorderCap(t *testing.T) {
	rel := &appendOnly{}
	rec := newRecorder(rel, "t", "abcd1234", time.Now, time.Hour)
	for i := range 2000 {
		rec.add(relay.ActivityEntry{Kind: relay.StepMessage, Text: fmt.Sprintf("message %d", i)})
	}
	rec.add(relay.ActivityEntry{Kind: relay.StepFiles, Text: "Files: 1 added"}, relay.ActivityEntry{Kind: relay.StepEnd, Text: "Finished."})
	if err := rec.close(); err != nil {
		t.Fatal(err)
	}
	rec.add(relay.ActivityEntry{Kind: relay.StepMessage, Text: "after close"})
	got := rel.all()
	if len(got) != MaxActivityEntries+2 {
		t.Fatalf("%d entries, want %d", len(got), MaxActivityEntries+2)
	}
	if n := got[MaxActivityEntries-1]; n.Kind != relay.StepError || !strings.Contains(n.Text, "later steps are not shown") {
		t.Fatalf("entry %d = %+v", MaxActivityEntries, n)
	}
	if got[len(got)-2].Kind != relay.StepFiles || got[len(got)-1].Kind != relay.StepEnd {
		t.Fatalf("tail = %+v", got[len(got)-2:])
	}
}

// Ensures secrets are hidden, text and detail clipped, refs prefixed,
// pending steps with the same ref replaced and output lines merged.
func TestRecorderShapes(t *testing.T) {
	rel := &appendOnly{}
	rec := newRecorder(rel, "t", "abcd1234", time.Now, time.Hour, "ccr_secret")
	rec.add(
		relay.ActivityEntry{Kind: relay.StepCommand, Text: "run ccr_secret", Ref: "item_1", Status: relay.StepRunning},
		relay.ActivityEntry{Kind: relay.StepCommand, Text: "run", Ref: "item_1", Status: relay.StepOK, Detail: strings.Repeat("d", 10000) + "ccr_secret"},
		relay.ActivityEntry{Kind: relay.StepOutput, Text: "line one"},
		relay.ActivityEntry{Kind: relay.StepOutput, Text: "line two ccr_secret"},
		relay.ActivityEntry{Kind: relay.StepMessage, Text: strings.Repeat("é", 3000)},
		relay.ActivityEntry{Kind: relay.StepOutput, Text: strings.Repeat("o", 1990)},
		relay.ActivityEntry{Kind: relay.StepOutput, Text: "does not fit"},
	)
	if err := rec.close(); err != nil {
		t.Fatal(err)
	}
	got := rel.all()
	if len(got) != 5 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	cmd := got[0]
	if cmd.Ref != "abcd1234:item_1" || cmd.Status != relay.StepOK || utf8.RuneCountInString(cmd.Detail) > 4100 ||
		!strings.Contains(cmd.Detail, "characters not shown") || !strings.HasSuffix(cmd.Detail, "[hidden]") {
		t.Fatalf("command = %+v", cmd)
	}
	if got[1].Text != "line one\nline two [hidden]" {
		t.Fatalf("merged output = %q", got[1].Text)
	}
	if n := utf8.RuneCountInString(got[2].Text); n != 2000 || !strings.HasSuffix(got[2].Text, "…") {
		t.Fatalf("clipped text: %d runes", n)
	}
	if got[4].Text != "does not fit" {
		t.Fatalf("unmerged output = %q", got[4].Text[:20])
	}
	for _, e := range got {
		if e.At == "" || strings.Contains(e.Text+e.Detail, "ccr_secret") {
			t.Fatalf("entry %+v", e)
		}
	}
}

// Ensures batches are written on the timer, before the end.
func TestRecorderBatches(t *testing.T) {
	rel := &appendOnly{}
	rec := newRecorder(rel, "t", "abcd1234", time.Now, 20*time.Millisecond)
	defer func() { _ = rec.close() }()
	rec.add(relay.ActivityEntry{Kind: relay.StepMessage, Text: "hello"})
	deadline := time.Now().Add(5 * time.Second)
	for len(rel.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no batch written")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCapture(t *testing.T) {
	var lines []string
	c := newCapture(func(l string) { lines = append(lines, l) })
	for _, chunk := range []string{"one\r\ntw", "o\n", "\nthree"} {
		if _, err := c.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	c.flush()
	if want := []string{"one", "two", "", "three"}; !reflect.DeepEqual(lines, want) {
		t.Fatalf("lines = %q, want %q", lines, want)
	}
	if c.text() != "one\r\ntwo\n\nthree" || !strings.HasSuffix(c.tail(), "three") {
		t.Fatalf("text %q tail %q", c.text(), c.tail())
	}
}

func TestParseProcessFile(t *testing.T) {
	tests := []struct {
		in           string
		pid          int
		image, start string
	}{
		{"123\nclaude\n", 123, "claude", ""},
		{"123\nclaude\n9876\n", 123, "claude", "9876"},
		{"x\nclaude", 0, "", ""},
		{"123", 0, "", ""},
	}
	for _, tt := range tests {
		pid, image, start := parseProcessFile(tt.in)
		if pid != tt.pid || image != tt.image || start != tt.start {
			t.Errorf("parseProcessFile(%q) = %d %q %q", tt.in, pid, image, start)
		}
	}
}

// Ensures a recovered answer's label says why recovery was needed, and a
// turn interrupted before any answer is blocked as not re-sent.
func TestRecoveredLabelSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		ex   execResult
		want string // the label, "" when nothing is recovered
	}{
		{"timed out", execResult{timedOut: true, exitCode: -1}, "[Recovered from the session's transcript: the CLI timed out after 5 minutes before it printed its answer.]"},
		{"exited with a code", execResult{exitCode: 3}, "[Recovered from the session's transcript: the CLI exited with code 3 before it printed its answer.]"},
		{"killed", execResult{exitCode: -1}, "[Recovered from the session's transcript: the CLI was killed before it printed its answer.]"},
		{"no answer", execResult{}, "[Recovered from the session's transcript: the CLI ended without printing an answer.]"},
		{"interrupted by a restart", execResult{stopped: true, exitCode: -1}, "[Recovered from the session's transcript: the run was interrupted by a restart of the relay or its worker before the CLI printed its answer.]"},
		{"answered", execResult{answer: "Done."}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := recoverWhy(&tc.ex, 5)
			if tc.want == "" {
				if why != "" {
					t.Fatalf("recoverWhy = %q for an answered turn", why)
				}
				return
			}
			turn := &sessionTurn{info: sessionInfo{ID: "s1"}, token: "crosschat-req-1", why: why}
			out := turn.label(outcome{kind: relay.ReportCompleted, message: "Done.", result: "Done. crosschat-req-1"}, execResult{recovered: true})
			if !strings.HasPrefix(out.result, tc.want+"\n\n") || !strings.HasPrefix(out.message, "Recovered: ") {
				t.Fatalf("result %q, message %q; want the label %q", out.result, out.message, tc.want)
			}
		})
	}
	blocked := (&sessionTurn{info: sessionInfo{ID: "s1", Label: "release prep"}, notResent: true}).label(outcome{kind: relay.ReportBlocked, message: "x"}, execResult{})
	if blocked.kind != relay.ReportBlocked || !strings.HasPrefix(blocked.message, InterruptedNotResent+": ") || !strings.Contains(blocked.message, "“release prep” (s1)") {
		t.Fatalf("not re-sent: %+v", blocked)
	}
}
