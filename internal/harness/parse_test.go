package harness_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// step is an activity entry in a compact form for comparisons.
type step struct{ Kind, Text, Detail, Status, Ref string }

func parseAll(events string, lines ...string) ([]step, runspec.StreamParser) {
	p := harness.NewParser(events)
	var out []step
	for _, l := range lines {
		for _, e := range p.Line(l) {
			out = append(out, step{e.Kind, e.Text, e.Detail, e.Status, e.Ref})
		}
	}
	return out, p
}

func sameSteps(t *testing.T, got, want []step) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d steps, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// Ensure the upstream Codex stream: message, command running then ok with
// the PowerShell wrapper removed, file change, final message as the answer.
func TestCodexStream(t *testing.T) {
	got, p := parseAll(runspec.EventsCodexJSON,
		`{"type":"thread.started","thread_id":"th_1"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Looking."}}`,
		`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"\"C:\\\\WINDOWS\\\\System32\\\\WindowsPowerShell\\\\v1.0\\\\powershell.exe\" -Command 'Get-ChildItem .'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"\"C:\\\\WINDOWS\\\\System32\\\\WindowsPowerShell\\\\v1.0\\\\powershell.exe\" -Command 'Get-ChildItem .'","aggregated_output":"note.txt\n","exit_code":0,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"a.png","kind":"add"},{"path":"b.txt","kind":"update"},{"path":"c.txt","kind":"delete"}],"status":"completed"}}`,
		`{"type":"item.updated","item":{"id":"item_3","type":"todo_list","items":[{"text":"Draw","completed":true},{"text":"Check","completed":false}]}}`,
		`{"type":"item.completed","item":{"id":"item_4","type":"web_search","query":"harbour map"}}`,
		`{"type":"item.completed","item":{"id":"item_5","type":"reasoning","text":"**Thinking**"}}`,
		`{"type":"item.completed","item":{"id":"item_6","type":"mcp_tool_call","server":"crosschat","tool":"post_task","arguments":{},"result":null,"error":{"message":"chain_limit"},"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"item_7","type":"agent_message","text":"Done: a.png"}}`,
	)
	sameSteps(t, got, []step{
		{relay.StepMessage, "Looking.", "", "", "item_0"},
		{relay.StepCommand, "Get-ChildItem .", "", relay.StepRunning, "item_1"},
		{relay.StepCommand, "Get-ChildItem .", "note.txt", relay.StepOK, "item_1"},
		{relay.StepFile, "Added a.png\nUpdated b.txt\nDeleted c.txt", "", relay.StepOK, "item_2"},
		{relay.StepPlan, "☑ Draw\n☐ Check", "", relay.StepRunning, "item_3"},
		{relay.StepTool, "Web search: harbour map", "", relay.StepOK, "item_4"},
		{relay.StepThinking, "**Thinking**", "", "", "item_5"},
		{relay.StepTool, "crosschat › post_task", "chain_limit", relay.StepFailed, "item_6"},
		{relay.StepMessage, "Done: a.png", "", "", "item_7"},
	})
	if p.Answer() != "Done: a.png" || p.SessionID() != "th_1" {
		t.Errorf("answer %q session %q", p.Answer(), p.SessionID())
	}
}

// Ensure a failed command is failed and turn and stream errors become error steps.
func TestCodexFailures(t *testing.T) {
	got, _ := parseAll(runspec.EventsCodexJSON,
		`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"/bin/bash -lc 'npm test'","aggregated_output":"1 failing","exit_code":1,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"rm -rf /","status":"declined"}}`,
		`{"type":"item.completed","item":{"id":"i3","type":"file_change","changes":[],"status":"failed"}}`,
		`{"type":"turn.failed","error":{"message":"rate limited"}}`,
		`{"type":"error","message":"stream disconnected"}`,
	)
	sameSteps(t, got, []step{
		{relay.StepCommand, "npm test", "1 failing", relay.StepFailed, "i1"},
		{relay.StepCommand, "rm -rf /", "", relay.StepFailed, "i2"},
		{relay.StepFile, "Changed files", "", relay.StepFailed, "i3"},
		{relay.StepError, "rate limited", "", relay.StepFailed, ""},
		{relay.StepError, "stream disconnected", "", relay.StepFailed, ""},
	})
}

// Ensure the upstream Claude stream: message, Read running then ok, an MCP
// tool labelled by server that fails, and the permission denials.
func TestClaudeStream(t *testing.T) {
	got, p := parseAll(runspec.EventsClaudeStream,
		`{"type":"system","subtype":"init","session_id":"s-1","tools":[]}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"tu1","name":"Read","input":{"file_path":"/w/a.txt"}}]},"session_id":"s-1"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":"1\thello\n"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"Now delegate."},{"type":"tool_use","id":"tu2","name":"mcp__crosschat-run__post_task","input":{"title":"Draw a map","recipientSlug":"x"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu2","is_error":true,"content":[{"type":"text","text":"not allowed"}]}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tu3","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"tu4","name":"Write","input":{"file_path":"/w/b.txt"}},{"type":"tool_use","id":"tu5","name":"NotebookEdit","input":{"notebook_path":"/w/n.ipynb"}},{"type":"tool_use","id":"tu6","name":"Bash","input":{}}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"hello","session_id":"s-1","permission_denials":[{"tool_name":"Bash","tool_use_id":"tu3"},{"tool_name":"mcp__crosschat-run__post_task"}]}`,
	)
	sameSteps(t, got, []step{
		{relay.StepMessage, "Reading.", "", "", ""},
		{relay.StepTool, "Read: /w/a.txt", "", relay.StepRunning, "tu1"},
		{relay.StepTool, "Read: /w/a.txt", "1\thello", relay.StepOK, "tu1"},
		{relay.StepThinking, "Now delegate.", "", "", ""},
		{relay.StepTool, "crosschat-run › post_task: Draw a map", "", relay.StepRunning, "tu2"},
		{relay.StepTool, "crosschat-run › post_task: Draw a map", "not allowed", relay.StepFailed, "tu2"},
		{relay.StepCommand, "ls", "", relay.StepRunning, "tu3"},
		{relay.StepFile, "Write /w/b.txt", "", relay.StepRunning, "tu4"},
		{relay.StepFile, "Edit /w/n.ipynb", "", relay.StepRunning, "tu5"},
		{relay.StepCommand, "Bash", "", relay.StepRunning, "tu6"},
		{relay.StepError, "Claude Code refused 2 tool calls that needed approval.", "Bash\ncrosschat-run › post_task", relay.StepFailed, ""},
	})
	if p.Answer() != "hello" || p.SessionID() != "s-1" {
		t.Errorf("answer %q session %q", p.Answer(), p.SessionID())
	}
	got, _ = parseAll(runspec.EventsClaudeStream, `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"too many turns"}`)
	sameSteps(t, got, []step{{relay.StepError, "Claude Code stopped: error_max_turns", "too many turns", relay.StepFailed, ""}})
}

// Ensure plain output makes a step of each non-empty line and has no answer.
func TestPlain(t *testing.T) {
	got, p := parseAll(runspec.EventsPlain, "step one", "", "   ", "All done.\r")
	sameSteps(t, got, []step{{relay.StepOutput, "step one", "", "", ""}, {relay.StepOutput, "All done.", "", "", ""}})
	if p.Answer() != "" || p.SessionID() != "" {
		t.Errorf("answer %q session %q", p.Answer(), p.SessionID())
	}
}

// Ensure shell wrappers are removed and other commands kept.
func TestUnwrapShell(t *testing.T) {
	for in, want := range map[string]string{
		"/bin/bash -lc 'ls -la'":         "ls -la",
		`bash -c "echo hi"`:              "echo hi",
		"/usr/bin/zsh -lc git status":    "git status",
		"sh -c 'a' 'b'":                  "'a' 'b'",
		`pwsh -NoProfile -Command 'dir'`: "dir",
		`cmd.exe /c dir`:                 "dir",
		"npm test":                       "npm test",
		"bash script.sh":                 "bash script.sh",
		"":                               "",
		`"C:\Program Files\PowerShell\7\pwsh.exe" -Command 'Get-Item x'`: "Get-Item x",
	} {
		if got := harness.UnwrapShell(in); got != want {
			t.Errorf("UnwrapShell(%q) = %q, want %q", in, got, want)
		}
	}
}

// Ensure odd input never breaks a parser: non-JSON lines are output,
// truncated JSON too, unknown types and wrong field types are skipped.
func TestParserEdgeCases(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	for _, events := range []string{runspec.EventsClaudeStream, runspec.EventsCodexJSON, runspec.EventsGeminiStream} {
		t.Run(events, func(t *testing.T) {
			got, p := parseAll(events,
				"warning: something on stdout",
				`{"type":"assistant","message":{"content":[{"type":"text","te`,
				`{"type":"no-such-type","x":1}`,
				`[1,2,3]`,
				`null`,
				`{"type":"assistant","message":"nope"}`,
				`{"type":"item.completed","item":"nope"}`,
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"missing","content":"x"}]}}`,
				`{"type":"item.completed","item":{"type":"command_execution","exit_code":"1","command":7}}`,
				`{"type":"tool_use","parameters":"x","tool_name":3}`,
				`{"type":"result","permission_denials":"x","is_error":"yes","result":5}`,
				"",
				huge,
			)
			if len(got) < 4 {
				t.Fatalf("got %+v", got)
			}
			want := []step{
				{relay.StepOutput, "warning: something on stdout", "", "", ""},
				{relay.StepOutput, `{"type":"assistant","message":{"content":[{"type":"text","te`, "", "", ""},
				{relay.StepOutput, "[1,2,3]", "", "", ""},
				{relay.StepOutput, "null", "", "", ""},
			}
			sameSteps(t, got[:4], want)
			if last := got[len(got)-1]; last.Kind != relay.StepOutput || len(last.Text) != len(huge) {
				t.Errorf("huge line: %s of %d bytes", last.Kind, len(last.Text))
			}
			_ = p.Answer()
			_ = p.SessionID()
		})
	}
	if _, ok := harness.NewParser("unknown").(interface{ Answer() string }); !ok {
		t.Error("unknown format has no parser")
	}
}

// goldenStep is an activity entry without the fields the recorder sets.
type goldenStep struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Detail string `json:"detail,omitempty"`
	Status string `json:"status,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// parsed is the golden form of a parsed stream.
type parsed struct {
	Steps     []goldenStep `json:"steps"`
	Answer    string       `json:"answer"`
	Failure   string       `json:"failure,omitempty"`
	SessionID string       `json:"sessionId"`
}

// Ensure the streams captured from the real CLIs (testdata/streams/*.jsonl)
// parse into their golden steps, answer, failure and session id: a run
// (claude-run, codex-run, gemini-run), a resumed one, and the CLI's own
// failures in place of an answer (Claude Code not logged in, on the oldest
// and the current lane; Codex over its quota).
func TestCapturedStreams(t *testing.T) {
	formats := map[string]string{"claude": runspec.EventsClaudeStream, "codex": runspec.EventsCodexJSON, "gemini": runspec.EventsGeminiStream}
	eachCase(t, "streams", ".jsonl", 1, func(t *testing.T, name string, b []byte) {
		cli, _, _ := strings.Cut(name, "-")
		events, ok := formats[cli]
		if !ok {
			t.Fatalf("%s: unknown CLI %q", name, cli)
		}
		p := harness.NewParser(events)
		res := parsed{Steps: []goldenStep{}}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
		for sc.Scan() {
			for _, e := range p.Line(sc.Text()) {
				if e.Seq != 0 || e.At != "" || e.Files != nil {
					t.Errorf("parser set recorder fields: %+v", e)
				}
				res.Steps = append(res.Steps, goldenStep{e.Kind, e.Text, e.Detail, e.Status, e.Ref})
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		res.Answer, res.Failure, res.SessionID = p.Answer(), p.Failure(), p.SessionID()
		if (res.Answer == "" && res.Failure == "") || res.SessionID == "" {
			t.Errorf("answer %q, failure %q, session %q", res.Answer, res.Failure, res.SessionID)
		}
		if failed := strings.Contains(name, "notloggedin") || strings.Contains(name, "quota"); failed != (res.Failure != "") {
			t.Errorf("%s: failure %q", name, res.Failure)
		}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			t.Fatal(err)
		}
		golden(t, "streams/"+name+".golden", out.Bytes())
	})
}

// Ensure Gemini's stream-json: streamed message deltas join into one
// message and the answer, tools are labelled (MCP by server), results
// close their step, and errors and a failed result become error steps.
func TestGeminiStream(t *testing.T) {
	got, p := parseAll(runspec.EventsGeminiStream,
		`{"type":"init","session_id":"g-1","model":"auto"}`,
		`{"type":"message","role":"user","content":"the prompt"}`,
		`{"type":"message","role":"assistant","content":"Let me ","delta":true}`,
		`{"type":"message","role":"assistant","content":"look.","delta":true}`,
		`{"type":"tool_use","tool_name":"mcp_crosschat_post_task","tool_id":"t1","parameters":{"title":"Draw"}}`,
		`{"type":"tool_result","tool_id":"t1","status":"error","output":"","error":{"type":"x","message":"chain_limit"}}`,
		`{"type":"tool_use","tool_name":"replace","tool_id":"t2","parameters":{"file_path":"/w/a.txt"}}`,
		`{"type":"tool_use","tool_name":"read_file","tool_id":"t3","parameters":{"absolute_path":"/w/b.txt"}}`,
		`{"type":"tool_result","tool_id":"t3","status":"success","output":"hello\n"}`,
		`{"type":"error","severity":"warning","message":"Loop detected"}`,
		`{"type":"message","role":"assistant","content":"Done.","delta":true}`,
		`{"type":"result","status":"error","error":{"type":"FatalToolExecutionError","message":"disk full"}}`,
	)
	sameSteps(t, got, []step{
		{relay.StepMessage, "Let me look.", "", "", ""},
		{relay.StepTool, "crosschat › post_task: Draw", "", relay.StepRunning, "t1"},
		{relay.StepTool, "crosschat › post_task: Draw", "chain_limit", relay.StepFailed, "t1"},
		{relay.StepFile, "Edit /w/a.txt", "", relay.StepRunning, "t2"},
		{relay.StepTool, "read_file: /w/b.txt", "", relay.StepRunning, "t3"},
		{relay.StepTool, "read_file: /w/b.txt", "hello", relay.StepOK, "t3"},
		{relay.StepError, "Loop detected", "", "", ""},
		{relay.StepMessage, "Done.", "", "", ""},
		{relay.StepError, "Gemini CLI stopped: error", "disk full", relay.StepFailed, ""},
	})
	if p.Answer() != "Done." || p.SessionID() != "g-1" {
		t.Errorf("answer %q session %q", p.Answer(), p.SessionID())
	}
	_, p = parseAll(runspec.EventsGeminiStream, `{"type":"message","role":"assistant","content":"Cut ","delta":true}`, `{"type":"message","role":"assistant","content":"short","delta":true}`)
	if p.Answer() != "Cut short" {
		t.Errorf("unfinished stream: answer %q", p.Answer())
	}
}

// Ensure each parser tells the CLI's own error from an answer (Failure):
// it is what the last turn ended with, so a turn that answers after an
// error clears it, and an answer alone never sets it.
func TestStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name, events string
		lines        []string
		failure      string
	}{
		{"claude answers", runspec.EventsClaudeStream, []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"Please run /login to see the page."}]}}`,
			`{"type":"result","subtype":"success","is_error":false,"result":"Please run /login to see the page."}`}, ""},
		{"claude not logged in", runspec.EventsClaudeStream, []string{
			`{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}`,
			`{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}`}, "Not logged in · Please run /login"},
		{"claude error message, then the process died", runspec.EventsClaudeStream, []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: 529 overloaded"}]},"error":"server_error"}`}, "API Error: 529 overloaded"},
		{"claude error message without text", runspec.EventsClaudeStream, []string{
			`{"type":"assistant","message":{"content":[]},"error":"rate_limit"}`}, "Claude Code failed: rate_limit"},
		{"claude error, then an answer", runspec.EventsClaudeStream, []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: 529 overloaded"}]},"error":"server_error"}`,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}`,
			`{"type":"result","subtype":"success","is_error":false,"result":"Done."}`}, ""},
		{"claude gave up (max turns)", runspec.EventsClaudeStream, []string{
			`{"type":"result","subtype":"error_max_turns","is_error":true}`}, "Claude Code stopped: error_max_turns"},
		{"codex turn failed", runspec.EventsCodexJSON, []string{
			`{"type":"turn.started"}`, `{"type":"error","message":"Reconnecting... 1/5"}`,
			`{"type":"turn.failed","error":{"message":"Quota exceeded."}}`}, "Quota exceeded."},
		{"codex retried, then completed", runspec.EventsCodexJSON, []string{
			`{"type":"turn.started"}`, `{"type":"error","message":"Reconnecting... 1/5"}`,
			`{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"Fixed."}}`,
			`{"type":"turn.completed","usage":{}}`}, ""},
		{"gemini failed", runspec.EventsGeminiStream, []string{
			`{"type":"result","status":"error","error":{"type":"auth","message":"Please set an Auth method."}}`}, "Please set an Auth method."},
		{"gemini answered", runspec.EventsGeminiStream, []string{
			`{"type":"message","role":"assistant","content":"Done."}`, `{"type":"result","status":"success"}`}, ""},
		{"plain output", "", []string{"Not logged in · Please run /login"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := parseAll(tc.events, tc.lines...)
			if got := p.Failure(); got != tc.failure {
				t.Fatalf("Failure() = %q, want %q", got, tc.failure)
			}
		})
	}
}

// Ensure a Gemini run's MCP tools are labelled by server: the run's own,
// named with its random suffix (runspec.Request's Server), as
// runspec.RunServer; the user's relay server by its name; anything else as
// Gemini names it.
func TestGeminiToolLabels(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"mcp_crosschat-run-0a1b2c3d4e5f_post_task", "crosschat-run › post_task"},
		{"mcp_crosschat-run_post_task", "crosschat-run › post_task"},
		{"mcp_crosschat_list_agents", "crosschat › list_agents"},
		{"mcp_crosschat-run-0a1b2c3d4e5f", "mcp_crosschat-run-0a1b2c3d4e5f"},
		{"mcp_other_post_task", "mcp_other_post_task"},
	} {
		line := `{"type":"tool_use","tool_name":"` + tc.tool + `","tool_id":"t1","parameters":{}}`
		got, _ := parseAll(runspec.EventsGeminiStream, line)
		if len(got) != 1 || !strings.HasPrefix(got[0].Text, tc.want) {
			t.Errorf("%s: steps %+v, want a step labelled %q", tc.tool, got, tc.want)
		}
	}
}
