package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The APIs a FakeModel speaks (Anthropic, Responses, Gemini): each reads a
// request into a turn and writes the script's next step in its own format.

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
