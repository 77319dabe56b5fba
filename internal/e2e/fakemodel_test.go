package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/e2e"
)

// convo builds one API's request bodies from a conversation.
type convo struct {
	api, path string
	// body renders tools and (role, kind, name, text) items as a request.
	body func(tools []string, items [][4]string) map[string]any
}

var convos = []convo{
	{e2e.Anthropic, "/v1/messages?beta=true", func(tools []string, items [][4]string) map[string]any {
		var ts, msgs []any
		for _, n := range tools {
			ts = append(ts, map[string]any{"name": n})
		}
		for _, it := range items {
			var b map[string]any
			switch it[1] {
			case "text":
				b = map[string]any{"type": "text", "text": it[3]}
			case "call":
				b = map[string]any{"type": "tool_use", "id": "t" + it[2], "name": it[2], "input": map[string]any{}}
			default:
				b = map[string]any{"type": "tool_result", "tool_use_id": "t" + it[2], "content": it[3]}
			}
			msgs = append(msgs, map[string]any{"role": it[0], "content": []any{b}})
		}
		return map[string]any{"model": "m", "stream": true, "tools": ts, "messages": msgs}
	}},
	{e2e.Responses, "/v1/responses", func(tools []string, items [][4]string) map[string]any {
		ts := []any{map[string]any{"type": "function", "name": "exec_command"}}
		var mcp []any
		for _, n := range tools {
			if tool, ok := strings.CutPrefix(n, "mcp__crosschat-run__"); ok {
				mcp = append(mcp, map[string]any{"name": tool})
			}
		}
		ts = append(ts, map[string]any{"type": "namespace", "name": "mcp__crosschat", "tools": mcp})
		var in []any
		for _, it := range items {
			switch it[1] {
			case "text":
				in = append(in, map[string]any{"type": "message", "role": it[0], "content": []any{map[string]any{"type": "input_text", "text": it[3]}}})
			case "call":
				in = append(in, map[string]any{"type": "function_call", "call_id": "c" + it[2], "name": it[2], "arguments": "{}"})
			default:
				in = append(in, map[string]any{"type": "function_call_output", "call_id": "c" + it[2], "output": it[3]})
			}
		}
		return map[string]any{"model": "m", "stream": true, "tools": ts, "input": in}
	}},
	{e2e.Gemini, "/v1beta/models/m:streamGenerateContent", func(tools []string, items [][4]string) map[string]any {
		var decls, contents []any
		for _, n := range tools {
			decls = append(decls, map[string]any{"name": n})
		}
		for _, it := range items {
			role := "user"
			if it[0] == "assistant" {
				role = "model"
			}
			var p map[string]any
			switch it[1] {
			case "text":
				p = map[string]any{"text": it[3]}
			case "call":
				p = map[string]any{"functionCall": map[string]any{"name": it[2], "args": map[string]any{}}}
			default:
				p = map[string]any{"functionResponse": map[string]any{"name": it[2], "response": map[string]any{"output": it[3]}}}
			}
			contents = append(contents, map[string]any{"role": role, "parts": []any{p}})
		}
		return map[string]any{"tools": []any{map[string]any{"functionDeclarations": decls}}, "contents": contents}
	}},
}

// Ensure the fake model follows its script in each API: the MCP calls, the
// file, the final answer; and that a request-changes round is told apart
// from a fresh session by the history it carries.
func TestFakeModelScript(t *testing.T) {
	tools := []string{"Write", "write_file", "mcp__crosschat-run__list_agents", "mcp__crosschat-run__post_task"}
	prompt := [4]string{"user", "text", "", "## Task: Review notes e2e-x"}
	r1 := [][4]string{prompt}
	done := [][4]string{prompt,
		{"assistant", "call", "list_agents", ""}, {"user", "result", "list_agents", `{"agents":[{"slug":"reviewer"}]}`},
		{"assistant", "call", "post_task", ""}, {"user", "result", "post_task", `{"id":"0b6c9a52-5d0e-4a57-8f0e-3f7f0a4b8c11"}`},
		{"assistant", "call", "w", ""}, {"user", "result", "w", "written"},
	}
	resumed := append(append([][4]string{}, done...),
		[4]string{"assistant", "text", "", e2e.FinalPrefix + "e2e-x: wrote it."},
		[4]string{"user", "text", "", "Operator asked for changes. Changes requested: more."})
	fresh := [][4]string{{"user", "text", "", "## Earlier rounds\n- Your earlier result: " + e2e.FinalPrefix + "e2e-x\n- Changes requested: more."}}

	for _, c := range convos {
		t.Run(c.api, func(t *testing.T) {
			fm, err := e2e.StartFakeModel(c.api, e2e.Script{Marker: "e2e-x", Workdir: "/w", File: "F.md", HandOffTo: "reviewer"})
			if err != nil {
				t.Fatal(err)
			}
			defer fm.Close()
			post := func(items [][4]string) string {
				t.Helper()
				b, _ := json.Marshal(c.body(tools, items))
				resp, err := http.Post(fm.URL()+c.path, "application/json", bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				return string(out)
			}
			if out := post(r1); !strings.Contains(out, "list_agents") || !strings.Contains(out, "includeOffline") {
				t.Errorf("first step is not list_agents: %s", out)
			}
			if out := post(done[:3]); !strings.Contains(out, "post_task") || !strings.Contains(out, "reviewer") {
				t.Errorf("second step is not post_task: %s", out)
			}
			if out := post(done[:5]); !strings.Contains(out, "F.md") {
				t.Errorf("third step does not write F.md: %s", out)
			}
			if out := post(done); !strings.Contains(out, e2e.FinalPrefix+"e2e-x") {
				t.Errorf("no final answer: %s", out)
			}
			s := fm.Seen()
			if !s.MCPOffered || !strings.Contains(s.Results["list_agents"], "reviewer") || e2e.TaskID(s.Results["post_task"]) == "" || s.Results["file"] != "written" {
				t.Errorf("seen %+v", s)
			}
			if out := post(fresh); !strings.Contains(out, "history=missing") {
				t.Errorf("a fresh session passed for a resumed one: %s", out)
			}
			if out := post(resumed); !strings.Contains(out, e2e.Round2Prefix+"e2e-x history=ok") {
				t.Errorf("resumed: %s (%s)", out, fm.Seen().Round2Detail)
			}
			if p := fm.Seen().Problems; len(p) > 0 {
				t.Errorf("problems: %v", p)
			}
		})
	}
}
