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

// Ensure the fake model takes Claude Code 2.1.332's deferred-tools shapes:
// the MCP tools named only in a system message, ToolSearch and a
// defer_loading placeholder in tools[]. It loads each relay tool with
// ToolSearch ("select:<tool>") before calling it, and counts a ToolSearch
// result as no step of its script; a tool sent with defer_loading is
// callable once a tool_reference loaded it.
func TestFakeModelToolSearch(t *testing.T) {
	fm, err := e2e.StartFakeModel(e2e.Anthropic, e2e.Script{Marker: "e2e-x", Workdir: "/w", File: "F.md", HandOffTo: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	defer fm.Close()
	const list, post = "mcp__crosschat-run__list_agents", "mcp__crosschat-run__post_task"
	system := map[string]any{"role": "system", "content": "The following deferred tools are available via ToolSearch:\n" + list + "\n" + post + "\nmcp__crosschat-run__whoami"}
	prompt := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "## Task: Review notes e2e-x"}}}
	call := func(id, name string, input map[string]any) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}
	}
	result := func(id string, content any) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}}
	}
	loadedRef := func(name string) []any {
		return []any{map[string]any{"type": "tool_reference", "tool_name": name}, map[string]any{"type": "text", "text": "Tool loaded."}}
	}
	tools := func(deferred ...string) []any {
		ts := []any{map[string]any{"name": "Write"}, map[string]any{"name": "ListAgents"}, map[string]any{"name": e2e.ToolSearch},
			map[string]any{"name": "DeferredToolPlaceholder", "defer_loading": true}}
		for _, d := range deferred {
			ts = append(ts, map[string]any{"name": d, "defer_loading": true})
		}
		return ts
	}
	post1 := func(ts []any, msgs ...map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "tools": ts, "messages": append([]map[string]any{system}, msgs...)})
		resp, err := http.Post(fm.URL()+"/v1/messages?beta=true", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	if out := post1(tools(), prompt); !strings.Contains(out, `"name":"ToolSearch"`) || !strings.Contains(out, `select:`+list) {
		t.Fatalf("first step does not load list_agents with ToolSearch: %s", out)
	}
	h := []map[string]any{prompt, call("s1", e2e.ToolSearch, map[string]any{"query": "select:" + list}), result("s1", loadedRef(list))}
	if out := post1(tools(list), h...); !strings.Contains(out, `"name":"`+list+`"`) || !strings.Contains(out, "includeOffline") {
		t.Fatalf("after loading, the step is not list_agents: %s", out)
	}
	h = append(h, call("l1", list, map[string]any{}), result("l1", `{"agents":[{"slug":"reviewer"}]}`))
	if out := post1(tools(list), h...); !strings.Contains(out, `select:`+post) {
		t.Fatalf("post_task is not loaded with ToolSearch: %s", out)
	}
	h = append(h, call("s2", e2e.ToolSearch, map[string]any{"query": "select:" + post}), result("s2", loadedRef(post)))
	if out := post1(tools(list, post), h...); !strings.Contains(out, `"name":"`+post+`"`) || !strings.Contains(out, "reviewer") {
		t.Fatalf("after loading, the step is not post_task: %s", out)
	}
	h = append(h, call("p1", post, map[string]any{}), result("p1", `{"id":"0b6c9a52-5d0e-4a57-8f0e-3f7f0a4b8c11"}`))
	if out := post1(tools(list, post), h...); !strings.Contains(out, "F.md") {
		t.Fatalf("the file step does not follow: %s", out)
	}
	s := fm.Seen()
	if !s.MCPOffered || len(s.ToolSearches) != 2 || !strings.Contains(s.Results["list_agents"], "reviewer") || e2e.TaskID(s.Results["post_task"]) == "" {
		t.Errorf("seen: offered %v, searches %v, results %v", s.MCPOffered, s.ToolSearches, s.Results)
	}
	if len(s.Deferred) != 3 {
		t.Errorf("deferred %v, want the three tools the system message names", s.Deferred)
	}

	// A resumed session: the tools of an alwaysLoad server come with
	// defer_loading and are loaded by a system message's tool_addition
	// blocks ("just became available"), so they are called directly.
	added := map[string]any{"role": "system", "content": []any{
		map[string]any{"type": "text", "text": "The following tools just became available and are ready to use:\n" + list + "\n" + post},
		map[string]any{"type": "tool_addition", "tool": map[string]any{"type": "tool_reference", "name": list}},
		map[string]any{"type": "tool_addition", "tool": map[string]any{"type": "tool_reference", "name": post}},
	}}
	fm2, err := e2e.StartFakeModel(e2e.Anthropic, e2e.Script{Marker: "e2e-y", Workdir: "/w", File: "F.md", HandOffTo: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	defer fm2.Close()
	b, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "tools": tools(list, post), "messages": []map[string]any{prompt, added}})
	resp, err := http.Post(fm2.URL()+"/v1/messages?beta=true", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(out), `"name":"`+list+`"`) || len(fm2.Seen().ToolSearches) != 0 {
		t.Errorf("tools added by tool_addition are not called directly: %s (searches %v)", out, fm2.Seen().ToolSearches)
	}
}
