// Package e2e holds the end-to-end tests that drive the real agent CLIs
// (Claude Code, Codex, Gemini CLI) through a whole relay, and the scripted
// fake model endpoint they talk to instead of a real model. Nothing here is
// used by the relay itself; the tests skip unless CROSSCHAT_E2E_CLIS is set.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// APIs a FakeModel speaks.
const (
	// Anthropic is the Anthropic Messages API (POST /v1/messages), for Claude Code.
	Anthropic = "anthropic"
	// Responses is the OpenAI Responses API (POST /v1/responses), for Codex.
	Responses = "responses"
	// Gemini is the Gemini API (:streamGenerateContent, :generateContent), for Gemini CLI.
	Gemini = "gemini"
)

// ChangesMarker is the text of the relay's prompt in a request-changes
// round: "… asked for changes. Changes requested: …" when the CLI resumes
// its session, "- Changes requested: …" among the earlier rounds when not.
const ChangesMarker = "Changes requested:"

// FinalPrefix and Round2Prefix start the fake model's final answers of the
// first round and of the request-changes round.
const (
	FinalPrefix  = "MOCK_FINAL: "
	Round2Prefix = "MOCK_FINAL_ROUND2: "
)

// Script is what the fake model does in the first round, one step per tool
// result it has already seen: list the relay's agents (MCP list_agents), hand
// a task off (MCP post_task), optionally run a shell command, write a file,
// then answer FinalPrefix + Marker. In a request-changes round (a prompt with
// ChangesMarker) it answers Round2Prefix + Marker at once, after checking that
// the request carries the first round's conversation.
type Script struct {
	// Marker identifies the task in answers and file contents.
	Marker string
	// Workdir is the worker's working folder, where the file is written.
	Workdir string
	// File is the name of the file written in Workdir.
	File string
	// HandOffTo is the agent slug of the post_task hand-off.
	HandOffTo string
	// Command is a shell command run before the file is written (Codex
	// only: Claude Code and Gemini CLI refuse shell commands in the
	// relay's headless modes); "" for none.
	Command string
	// Session switches to the session script of the session worker tests
	// (see SessionTurn); the fields above other than Marker are unused.
	Session bool
}

// Seen is what the fake model observed, for the test to assert on.
type Seen struct {
	// Requests lists "METHOD path" of every request.
	Requests []string
	// ToolsOffered are the tool names of the last main-loop request.
	ToolsOffered []string
	// MCPOffered tells whether the relay's list_agents was among the tools,
	// sent up front or deferred behind ToolSearch.
	MCPOffered bool
	// Deferred are the MCP tools a request named as deferred (Claude Code
	// 2.1.332 and later: loaded through ToolSearch), first request first.
	Deferred []string
	// ToolSearches are the ToolSearch queries the fake model made.
	ToolSearches []string
	// Results maps a tool step ("list_agents", "post_task", "command",
	// "file") to the text of the result the CLI sent back.
	Results map[string]string
	// Round2 is true once a request-changes round was answered.
	Round2 bool
	// Round2History tells whether that round's request carried the first
	// round's conversation: an assistant message with the first final
	// answer and the first round's tool results.
	Round2History bool
	// Round2Detail explains Round2History.
	Round2Detail string
	// Problems are requests the fake model did not expect.
	Problems []string
	// LastBody is the body of the last main-loop request (for failures).
	LastBody string
	// ChannelBodies are the bodies of requests that carry a Claude Code
	// channel event (a "<channel source=" message).
	ChannelBodies []string
	// SessionRequests are the request tokens of the session script's
	// main-loop requests, in order ("" for a person's own turn).
	SessionRequests []string
	// SessionTurns are the delivered turns of the session script, in order.
	SessionTurns []SessionTurn
	// Held are the request tokens whose answers were held.
	Held []string
}

// FakeModel is a scripted model endpoint on loopback.
type FakeModel struct {
	api    string
	script Script
	srv    *http.Server
	ln     net.Listener

	mu      sync.Mutex
	seen    Seen
	release chan struct{} // closed by Release (session script)
}

// StartFakeModel starts a fake model speaking api on 127.0.0.1:0. Close it
// when done.
func StartFakeModel(api string, s Script) (*FakeModel, error) {
	switch api {
	case Anthropic, Responses, Gemini:
	default:
		return nil, fmt.Errorf("fake model: unknown API %q", api)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake model: listen: %w", err)
	}
	f := &FakeModel{api: api, script: s, ln: ln, seen: Seen{Results: map[string]string{}}, release: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// URL is the endpoint's base URL (http://127.0.0.1:port, no trailing slash).
func (f *FakeModel) URL() string { return "http://" + f.ln.Addr().String() }

// Close stops the endpoint.
func (f *FakeModel) Close() error {
	f.Release() // held answers go, so their handlers end
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fake model: shutdown: %w", err)
	}
	return nil
}

// Seen returns a copy of what the fake model observed so far.
func (f *FakeModel) Seen() Seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.seen
	s.Requests = append([]string(nil), s.Requests...)
	s.ToolsOffered = append([]string(nil), s.ToolsOffered...)
	s.Deferred = append([]string(nil), s.Deferred...)
	s.ToolSearches = append([]string(nil), s.ToolSearches...)
	s.Problems = append([]string(nil), s.Problems...)
	s.ChannelBodies = append([]string(nil), s.ChannelBodies...)
	s.SessionRequests = append([]string(nil), s.SessionRequests...)
	s.SessionTurns = append([]SessionTurn(nil), s.SessionTurns...)
	s.Held = append([]string(nil), s.Held...)
	s.Results = make(map[string]string, len(f.seen.Results))
	for k, v := range f.seen.Results {
		s.Results[k] = v
	}
	return s
}

func (f *FakeModel) problem(format string, a ...any) {
	f.mu.Lock()
	f.seen.Problems = append(f.seen.Problems, fmt.Sprintf(format, a...))
	f.mu.Unlock()
}

// item is one entry of a conversation, whatever the API.
type item struct {
	role string // "user" or "assistant"
	kind string // "text", "call" or "result"
	name string // the tool of a call or result
	text string
}

// turn is the parsed main-loop request.
type turn struct {
	tools []string
	items []item
	// deferred are MCP tools the request names but does not send (their
	// schemas load through search, the ToolSearch tool).
	deferred []string
	search   string
}

// ToolSearch is Claude Code's tool that loads deferred tools (2.1.332 and
// later defer MCP tools behind it unless their server is "alwaysLoad").
// Called with {"query": "select:<tool>"}, its result is a tool_reference
// and the next request sends that tool's schema in tools[].
const ToolSearch = "ToolSearch"

// deferredName matches an MCP tool name as Claude Code writes it.
var deferredName = regexp.MustCompile(`mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_]+`)

// findDeferred lists the MCP tool names the body mentions that are not
// among tools (Claude Code names deferred tools in a system message).
func findDeferred(body string, tools []string) []string {
	var out []string
	for _, n := range deferredName.FindAllString(body, -1) {
		if !slices.Contains(tools, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// step is the fake model's answer: some text and/or one tool call.
type step struct {
	text string
	tool string         // the name to call, as the API offered it
	args map[string]any // its arguments
	// namespace is the Responses namespace of an MCP tool.
	namespace string
	// hold: send the answer only after Release (session script).
	hold bool
}

func (f *FakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.seen.Requests = append(f.seen.Requests, r.Method+" "+r.URL.Path)
	if strings.Contains(string(body), "<channel source=") {
		f.seen.ChannelBodies = append(f.seen.ChannelBodies, string(body))
	}
	f.mu.Unlock()
	if r.Method == http.MethodHead || r.Method == http.MethodGet {
		w.WriteHeader(http.StatusOK)
		return
	}
	var req map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			f.problem("%s %s: body is not JSON: %v", r.Method, r.URL.Path, err)
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
	}
	path := r.URL.Path
	switch {
	case f.api == Anthropic && strings.HasPrefix(path, "/v1/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 10})
	case f.api == Anthropic && strings.HasPrefix(path, "/v1/messages"):
		f.anthropic(w, r, req, string(body))
	case f.api == Responses && strings.HasSuffix(path, "/responses"):
		f.responses(w, r, req, string(body))
	case f.api == Gemini && strings.Contains(path, ":streamGenerateContent"):
		f.gemini(w, req, string(body), true)
	case f.api == Gemini && strings.Contains(path, ":generateContent"):
		f.gemini(w, req, string(body), false)
	case f.api == Gemini && strings.Contains(path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 10})
	default:
		f.problem("unexpected request %s %s", r.Method, path)
		http.NotFound(w, r)
	}
}

// next decides the answer to a main-loop request and records what it shows.
func (f *FakeModel) next(t turn, body string) step {
	s := f.script
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen.ToolsOffered = t.tools
	f.seen.LastBody = body
	if s.Session {
		return f.sessionStep(t)
	}

	// The round starts at the last user text of the request-changes prompt.
	start := -1
	for i, it := range t.items {
		if it.role == "user" && it.kind == "text" && strings.Contains(it.text, ChangesMarker) {
			start = i
		}
	}
	if start >= 0 {
		var finals, results int
		for _, it := range t.items[:start] {
			if it.role == "assistant" && it.kind == "text" && strings.Contains(it.text, FinalPrefix+s.Marker) {
				finals++
			}
			if it.kind == "result" {
				results++
			}
		}
		f.seen.Round2 = true
		f.seen.Round2History = finals > 0 && results > 0
		f.seen.Round2Detail = fmt.Sprintf("before the changes prompt: %d assistant message(s) with %q, %d tool result(s), %d item(s) in all",
			finals, FinalPrefix+s.Marker, results, start)
		verdict := "history=missing"
		if f.seen.Round2History {
			verdict = "history=ok"
		}
		return step{text: Round2Prefix + s.Marker + " " + verdict}
	}

	// First round: one step per tool result already in the request
	// (ToolSearch's own results load tools; they are no step).
	var results []item
	for _, it := range t.items {
		if it.kind == "result" && it.name != ToolSearch {
			results = append(results, it)
		}
	}
	if len(t.deferred) > 0 && f.seen.Deferred == nil {
		f.seen.Deferred = t.deferred
	}
	list, post, ns := f.mcpTools(append(slices.Clone(t.tools), t.deferred...))
	f.seen.MCPOffered = list != ""
	var plan []step
	if list != "" {
		plan = append(plan, step{tool: list, namespace: ns, args: map[string]any{"includeOffline": true}})
	}
	if post != "" {
		plan = append(plan, step{tool: post, namespace: ns, args: map[string]any{
			"recipientSlug": s.HandOffTo,
			"title":         "Review " + s.Marker,
			"instructions":  "Review " + s.File + " for " + s.Marker + ".",
		}})
	}
	if s.Command != "" {
		plan = append(plan, f.commandStep())
	}
	plan = append(plan, f.fileStep())
	labels := make([]string, 0, len(plan))
	for _, p := range plan {
		labels = append(labels, p.label())
	}
	for i, r := range results {
		if i < len(labels) {
			f.seen.Results[labels[i]] = r.text
		}
	}
	if len(results) < len(plan) {
		next := plan[len(results)]
		if t.search != "" && slices.Contains(t.deferred, next.tool) {
			// Not loaded yet: load it through ToolSearch first.
			q := "select:" + next.tool
			f.seen.ToolSearches = append(f.seen.ToolSearches, q)
			return step{tool: t.search, args: map[string]any{"query": q, "max_results": 5}}
		}
		return next
	}
	return step{text: FinalPrefix + s.Marker + ": wrote " + s.File + " and handed the review to " + s.HandOffTo + "."}
}

// label names a step in Seen.Results.
func (s step) label() string {
	switch {
	case strings.HasSuffix(s.tool, "list_agents"):
		return "list_agents"
	case strings.HasSuffix(s.tool, "post_task"):
		return "post_task"
	case s.tool == "exec_command" && s.args["cmd"] != nil && strings.HasPrefix(fmt.Sprint(s.args["cmd"]), "apply_patch"):
		return "file"
	case s.tool == "exec_command":
		return "command"
	}
	return "file"
}

// mcpTools finds the relay's list_agents and post_task among the offered
// tools, and (Responses) their namespace.
func (f *FakeModel) mcpTools(tools []string) (list, post, namespace string) {
	for _, t := range tools {
		ns, name, nested := strings.Cut(t, "/")
		if !nested {
			ns, name = "", t
		}
		mcp := nested || strings.HasPrefix(name, "mcp_")
		if !mcp {
			continue
		}
		switch {
		case strings.HasSuffix(name, "list_agents"):
			list, namespace = name, ns
		case strings.HasSuffix(name, "post_task"):
			post = name
		}
	}
	return list, post, namespace
}

func (f *FakeModel) commandStep() step {
	return step{tool: "exec_command", args: map[string]any{"cmd": f.script.Command, "workdir": f.script.Workdir}}
}

func (f *FakeModel) fileStep() step {
	s := f.script
	content := "Reviewed by the fake model for " + s.Marker + ".\n"
	path := strings.TrimRight(s.Workdir, "/") + "/" + s.File
	switch f.api {
	case Anthropic:
		return step{tool: "Write", args: map[string]any{"file_path": path, "content": content}}
	case Responses:
		patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + s.File + "\n+" + strings.TrimSuffix(content, "\n") + "\n*** End Patch\nEOF\n"
		return step{tool: "exec_command", args: map[string]any{"cmd": patch, "workdir": s.Workdir}}
	default:
		return step{tool: "write_file", args: map[string]any{"file_path": path, "content": content}}
	}
}

// --- Anthropic Messages ---------------------------------------------------

func (f *FakeModel) anthropic(w http.ResponseWriter, r *http.Request, req map[string]any, body string) {
	var t turn
	// A deferred tool is sent with defer_loading: true; the API loads its
	// schema once the conversation references it: a ToolSearch result
	// ({"type": "tool_reference", "tool_name": …}), or, in a resumed
	// session, a system message's "tool_addition" blocks
	// ({"tool": {"type": "tool_reference", "name": …}}) for the tools that
	// "just became available" (an alwaysLoad server).
	loaded := map[string]bool{}
	walkToolReferences(req["messages"], func(name string) { loaded[name] = true })
	for _, tool := range arr(req, "tools") {
		name := str(asObj(tool), "name")
		if name == ToolSearch {
			t.search = name
		}
		if deferLoading, _ := asObj(tool)["defer_loading"].(bool); deferLoading && !loaded[name] {
			continue // not callable until loaded (or a placeholder)
		}
		t.tools = append(t.tools, name)
	}
	if t.search != "" {
		t.deferred = findDeferred(body, t.tools)
	}
	names := map[string]string{}
	for _, m := range arr(req, "messages") {
		mo := asObj(m)
		role := str(mo, "role")
		if s, ok := mo["content"].(string); ok {
			t.items = append(t.items, item{role: role, kind: "text", text: s})
			continue
		}
		for _, b := range arr(mo, "content") {
			bo := asObj(b)
			switch str(bo, "type") {
			case "text":
				t.items = append(t.items, item{role: role, kind: "text", text: str(bo, "text")})
			case "tool_use":
				names[str(bo, "id")] = str(bo, "name")
				t.items = append(t.items, item{role: role, kind: "call", name: str(bo, "name")})
			case "tool_result":
				t.items = append(t.items, item{role: role, kind: "result", name: names[str(bo, "tool_use_id")], text: contentText(bo["content"])})
			}
		}
	}
	var st step
	if len(t.tools) == 0 {
		// A side request (titles, summaries): no tools, answer plainly.
		st = step{text: "ok"}
	} else {
		st = f.next(t, body)
	}
	if st.hold && !f.holdRequest(r.Context()) {
		return
	}
	model := str(req, "model")
	var blocks []map[string]any
	if st.text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": st.text})
	}
	if st.tool != "" {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", time.Now().UnixNano()), "name": st.tool, "input": st.args})
	}
	stop := "end_turn"
	if st.tool != "" {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	if stream, _ := req["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	ev := sseWriter(w)
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	for i, b := range blocks {
		if b["type"] == "text" {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		} else {
			input, _ := json.Marshal(b["input"])
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// --- OpenAI Responses -----------------------------------------------------

func (f *FakeModel) responses(w http.ResponseWriter, r *http.Request, req map[string]any, body string) {
	var t turn
	for _, tool := range arr(req, "tools") {
		to := asObj(tool)
		if str(to, "type") == "namespace" {
			for _, c := range arr(to, "tools") {
				t.tools = append(t.tools, str(to, "name")+"/"+str(asObj(c), "name"))
			}
			continue
		}
		name := str(to, "name")
		if name == "" {
			name = str(to, "type")
		}
		t.tools = append(t.tools, name)
	}
	names := map[string]string{}
	for _, in := range arr(req, "input") {
		io := asObj(in)
		switch typ := str(io, "type"); {
		case typ == "message":
			role := str(io, "role")
			if role == "developer" || role == "system" {
				continue
			}
			if role != "user" {
				role = "assistant"
			}
			t.items = append(t.items, item{role: role, kind: "text", text: contentText(io["content"])})
		case strings.HasSuffix(typ, "_call"):
			names[str(io, "call_id")] = str(io, "name")
			t.items = append(t.items, item{role: "assistant", kind: "call", name: str(io, "name")})
		case strings.HasSuffix(typ, "_call_output"):
			t.items = append(t.items, item{role: "user", kind: "result", name: names[str(io, "call_id")], text: contentText(io["output"])})
		}
	}
	st := f.next(t, body)
	if st.hold && !f.holdRequest(r.Context()) {
		return
	}
	var items []map[string]any
	id := time.Now().UnixNano()
	if st.text != "" {
		items = append(items, map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%d", id),
			"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": st.text, "annotations": []any{}}}})
	}
	if st.tool != "" {
		args, _ := json.Marshal(st.args)
		call := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", id), "call_id": fmt.Sprintf("call_%d", id),
			"name": st.tool, "arguments": string(args), "status": "completed"}
		if st.namespace != "" {
			call["namespace"] = st.namespace
		}
		items = append(items, call)
	}
	ev := sseWriter(w)
	respID := fmt.Sprintf("resp_%d", id)
	ev("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID}})
	for i, it := range items {
		ev("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": it})
		ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": respID,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}})
}

// --- Gemini ---------------------------------------------------------------

func (f *FakeModel) gemini(w http.ResponseWriter, req map[string]any, body string, stream bool) {
	var t turn
	for _, tool := range arr(req, "tools") {
		for _, d := range arr(asObj(tool), "functionDeclarations") {
			t.tools = append(t.tools, str(asObj(d), "name"))
		}
	}
	for _, c := range arr(req, "contents") {
		co := asObj(c)
		role := "user"
		if str(co, "role") == "model" {
			role = "assistant"
		}
		for _, p := range arr(co, "parts") {
			po := asObj(p)
			switch {
			case po["functionCall"] != nil:
				t.items = append(t.items, item{role: role, kind: "call", name: str(asObj(po["functionCall"]), "name")})
			case po["functionResponse"] != nil:
				fr := asObj(po["functionResponse"])
				text := str(asObj(fr["response"]), "output")
				if text == "" {
					b, _ := json.Marshal(fr["response"])
					text = string(b)
				}
				t.items = append(t.items, item{role: role, kind: "result", name: str(fr, "name"), text: text})
			case po["text"] != nil:
				if thought, _ := po["thought"].(bool); !thought {
					t.items = append(t.items, item{role: role, kind: "text", text: str(po, "text")})
				}
			}
		}
	}
	usage := map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
	if !stream || len(t.tools) == 0 {
		// Side requests: the model router wants JSON, others plain text.
		text := "ok"
		if mime := str(asObj(req["generationConfig"]), "responseMimeType"); strings.Contains(mime, "json") {
			text = `{"reasoning":"a simple scripted task","model_choice":"flash"}`
		}
		resp := map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}}, "usageMetadata": usage}
		if !stream {
			writeJSON(w, resp)
			return
		}
		ev := sseWriter(w)
		ev("", resp)
		return
	}
	st := f.next(t, body)
	var parts []any
	if st.text != "" {
		parts = append(parts, map[string]any{"text": st.text})
	}
	if st.tool != "" {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": st.tool, "args": st.args}})
	}
	ev := sseWriter(w)
	ev("", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts},
		"finishReason": "STOP", "index": 0}}, "usageMetadata": usage, "modelVersion": "gemini-fake"})
}

// --- helpers --------------------------------------------------------------

// walkToolReferences calls found with the tool name of every
// {"type": "tool_reference"} object anywhere in v.
func walkToolReferences(v any, found func(name string)) {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			walkToolReferences(e, found)
		}
	case map[string]any:
		if str(t, "type") == "tool_reference" {
			if n := str(t, "tool_name"); n != "" {
				found(n)
			} else if n := str(t, "name"); n != "" {
				found(n)
			}
		}
		for _, e := range t {
			walkToolReferences(e, found)
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sseWriter starts an event stream and returns a function that sends one
// event (no "event:" line when name is "").
func sseWriter(w http.ResponseWriter) func(name string, data any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return func(name string, data any) {
		b, _ := json.Marshal(data)
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

func asObj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func arr(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// contentText is the text of a message or tool result: a string, or the
// text of each part of a content array, joined by newlines.
func contentText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, p := range t {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			} else if s := str(asObj(p), "text"); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if s := str(t, "text"); s != "" {
			return s
		}
		b, _ := json.Marshal(t)
		return string(b)
	}
	return ""
}

// TaskID finds the first "id" that is a UUID in a JSON text (a post_task
// result), or "".
func TaskID(result string) string {
	m := taskIDPattern.FindStringSubmatch(result)
	if m == nil {
		return ""
	}
	return m[1]
}

var taskIDPattern = regexp.MustCompile(`\\?"id\\?"\s*:\s*\\?"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)
