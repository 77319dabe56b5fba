package mcp

// The lean path for tools/call. Almost every request an agent sends is a
// plain tools/call, and mcp-go serves each one with a new stateless session,
// a notification forwarder goroutine and five JSON decodings of the body
// (envelope, protocol era, base message, meta, request). The lean path
// decodes the envelope once into typed structs, runs the same tool handler
// through the same middleware, and encodes the answer once, byte for byte as
// mcp-go would. Anything it does not recognise exactly (other methods,
// notifications, _meta, task-augmented calls, unknown fields or tools, the
// 2026-07-28 protocol) goes to mcp-go unchanged.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// leanHandler serves plain tools/call requests itself and hands everything
// else to lib (mcp-go's handler).
type leanHandler struct {
	lib   http.Handler
	tools map[string]server.ToolHandlerFunc // wrapped with the server's middleware

	life context.Context // ends parked calls (park.go); nil parks none
	// suspends says a parked claim can wait without its goroutine: the
	// service is a relay.ClaimStarter (suspend.go).
	suspends bool
	conns    parkedConns  // connections parked calls hold
	nParked  atomic.Int64 // how many
	tParked  atomic.Int64 // how many so far
	tidy     *tidier      // returns the memory a burst of them left (tidy.go)

	mu       sync.Mutex
	inflight map[string][]*leanInflight // cancel key → calls running under it
}

// leanInflight is one running call that notifications/cancelled can end.
type leanInflight struct{ cancel context.CancelFunc }

// newLeanHandler wraps lib. Each tool's handler is wrapped with mws the way
// mcp-go wraps it (the first middleware outermost).
func newLeanHandler(lib http.Handler, tools []server.ServerTool, mws []server.ToolHandlerMiddleware, life context.Context) *leanHandler {
	h := &leanHandler{lib: lib, tools: make(map[string]server.ToolHandlerFunc, len(tools)), life: life, inflight: map[string][]*leanInflight{}}
	for _, t := range tools {
		fn := t.Handler
		for i := len(mws) - 1; i >= 0; i-- {
			fn = mws[i](fn)
		}
		h.tools[t.Tool.Name] = fn
	}
	h.tidy = newTidier(h.nParked.Load)
	return h
}

// leanCall is a tools/call request the lean path serves.
type leanCall struct {
	id   any // as mcp-go decodes it: a string or a float64
	name string
	args json.RawMessage
}

func (h *leanHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.lib.ServeHTTP(w, r)
		return
	}
	body, err := readBody(r)
	if err != nil {
		// mcp-go reports the read error itself.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errorReader{err}))
		h.lib.ServeHTTP(w, r)
		return
	}
	if c, ok := h.parse(r.Header, body); ok {
		h.serveCall(w, r, c)
		return
	}
	h.noteCancel(r, body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.lib.ServeHTTP(w, r)
}

// maxPresize bounds the buffer readBody sizes from Content-Length alone.
const maxPresize = 1 << 20

// readBody is io.ReadAll(r.Body), read into a buffer of r.ContentLength
// bytes when that is known (the web layer sets it to the length of the body
// it read): one allocation of the body's size instead of a buffer grown
// from 512 bytes.
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > maxPresize {
		return io.ReadAll(r.Body)
	}
	b := make([]byte, n)
	if k, err := io.ReadFull(r.Body, b); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = nil // shorter than announced: what there is, as ReadAll
		}
		return b[:k], err
	}
	// The body should end here; whatever follows is kept, as ReadAll would.
	var one [1]byte
	k, err := r.Body.Read(one[:])
	if k == 0 && err != nil {
		if err == io.EOF {
			err = nil
		}
		return b, err
	}
	rest, err := io.ReadAll(r.Body)
	return append(append(b, one[:k]...), rest...), err
}

// parse recognises a plain tools/call that mcp-go would serve through its
// legacy (pre-2026-07-28) path with no notifications, hooks or options.
func (h *leanHandler) parse(hdr http.Header, body []byte) (leanCall, bool) {
	mt, _, err := mime.ParseMediaType(hdr.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return leanCall{}, false
	}
	if v := hdr.Get(mcp.HeaderProtocolVersion); v != "" && (!mcp.IsValidProtocolVersion(v) || mcp.IsModernProtocol(v)) {
		return leanCall{}, false
	}
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	// One JSON value and nothing else (json.Unmarshal refuses trailing
	// bytes), with no member mcp-go might read and the lean path would not:
	// only the envelope's own keys, spelled exactly (encoding/json would
	// also match other spellings, which go to mcp-go).
	if json.Unmarshal(body, &env) != nil || !envelopeKeysOnly(body) {
		return leanCall{}, false
	}
	if env.JSONRPC != mcp.JSONRPC_VERSION || env.Method != string(mcp.MethodToolsCall) || env.Params == nil {
		return leanCall{}, false
	}
	if _, ok := h.tools[env.Params.Name]; !ok {
		return leanCall{}, false
	}
	// The id must be a string or a number (mcp-go's any: string or float64).
	if len(env.ID) == 0 || (env.ID[0] != '"' && env.ID[0] != '-' && (env.ID[0] < '0' || env.ID[0] > '9')) {
		return leanCall{}, false
	}
	var id any
	if json.Unmarshal(env.ID, &id) != nil {
		return leanCall{}, false
	}
	// mcp-go also decodes the arguments into an any, which fails only on a
	// number beyond float64; such a call gets mcp-go's answer.
	if !numbersFitFloat(env.Params.Arguments) {
		return leanCall{}, false
	}
	return leanCall{id: id, name: env.Params.Name, args: env.Params.Arguments}, true
}

// serveCall runs the tool and writes mcp-go's answer for it. The tool runs
// on the request's context (a long-poll ends when the client goes away or
// the server shuts down, and still answers), and notifications/cancelled
// for its id from the same caller ends it too. A claim that may wait is
// served off net/http instead (park.go) when it can be.
func (h *leanHandler) serveCall(w http.ResponseWriter, r *http.Request, c leanCall) {
	if h.park(w, r, c) {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	status, body := h.run(ctx, cancel, r.Header, c)
	if status != http.StatusOK {
		http.Error(w, string(body), status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // the client may have gone; nobody is left to tell
}

// run runs the call on ctx, which cancel ends (notifications/cancelled
// calls it), and returns the HTTP status and body of its answer: 200 with
// the JSON-RPC response, or 500 with the reason it could not be encoded.
func (h *leanHandler) run(ctx context.Context, cancel context.CancelFunc, hdr http.Header, c leanCall) (int, []byte) {
	done := h.track(cancelKey(ctx, c.id), cancel)
	defer done()
	res, err := h.tools[c.name](ctx, c.request(hdr))
	return answerCall(c, res, err)
}

// start runs the call as run does, but a tool that can wait without its
// goroutine (suspend.go) may return before it answers: end gets the status
// and body once, on this goroutine or later on another.
func (h *leanHandler) start(ctx context.Context, cancel context.CancelFunc, c leanCall, end func(int, []byte)) {
	done := h.track(cancelKey(ctx, c.id), cancel)
	sus := &suspension{}
	res, err := h.tools[c.name](withSuspension(ctx, sus), c.request(nil))
	if isSuspended(res, err) {
		sus.returned(func(res *mcp.CallToolResult, err error) {
			done()
			end(answerCall(c, res, err))
		})
		return
	}
	done()
	end(answerCall(c, res, err))
}

// request is the call as mcp-go hands it to a tool, with hdr.
func (c leanCall) request(hdr http.Header) mcp.CallToolRequest {
	req := mcp.CallToolRequest{Header: hdr}
	req.Method = string(mcp.MethodToolsCall)
	req.Params.Name = c.name
	if len(c.args) > 0 {
		req.Params.RawArguments = c.args
	}
	return req
}

// answerCall is the HTTP status and body answering the call with what its
// tool returned.
func answerCall(c leanCall, res *mcp.CallToolResult, err error) (int, []byte) {
	var resp mcp.JSONRPCMessage
	switch {
	case err != nil:
		resp = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(c.id),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, err.Error(), nil)}
	case res == nil:
		resp = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(c.id),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, fmt.Sprintf("tool '%s' returned a nil result", c.name), nil)}
	default:
		resp = mcp.NewJSONRPCResultResponse(mcp.NewRequestId(c.id), res)
	}
	b, err := encodeResponse(c.id, res, resp)
	if err != nil {
		return http.StatusInternalServerError, []byte("encode response: " + err.Error())
	}
	return http.StatusOK, b
}

// encodeResponse is json.NewEncoder(w).Encode(resp), as mcp-go writes it.
// The common result (one plain text content, raw structured content) is
// written directly; the rest goes through encoding/json.
func encodeResponse(id any, res *mcp.CallToolResult, resp mcp.JSONRPCMessage) ([]byte, error) {
	if b, ok := encodeResult(id, res); ok {
		return b, nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// encodeResult writes {"jsonrpc":"2.0","id":…,"result":{"content":[{"type":
// "text","text":…}],"isError"?:true,"structuredContent":…}} and a newline,
// with encoding/json's escaping (HTML characters, U+2028, U+2029), for a
// result with exactly one plain text content and raw or no structured
// content. ok is false for any other result. The id and the text are
// encoded in a pooled buffer, so the answer is the one allocation.
func encodeResult(id any, res *mcp.CallToolResult) ([]byte, bool) {
	if res == nil || res.Meta != nil || res.ResultType != "" || len(res.InputRequests) > 0 || res.RequestState != "" ||
		len(res.RawStructuredContent) > 0 || len(res.Content) != 1 {
		return nil, false
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok || text.Annotations != nil || text.Meta != nil || text.Type != "text" {
		return nil, false
	}
	var structured string
	switch sc := res.StructuredContent.(type) {
	case nil:
	case compactRaw:
		if sc == "" {
			return nil, false
		}
		structured = htmlEscape(string(sc))
	case json.RawMessage:
		var b bytes.Buffer
		if json.Compact(&b, sc) != nil {
			return nil, false
		}
		structured = htmlEscape(b.String())
	default:
		b, err := json.Marshal(sc)
		if err != nil {
			return nil, false
		}
		structured = string(b)
	}
	e := getEncoder(true)
	defer e.put()
	if e.enc.Encode(id) != nil {
		return nil, false
	}
	idEnd := e.buf.Len() - 1 // Encode ends each value with a newline
	if e.enc.Encode(text.Text) != nil {
		return nil, false
	}
	enc := e.buf.Bytes()
	idJSON, textJSON := enc[:idEnd], enc[idEnd+1:len(enc)-1]

	const (
		head    = `{"jsonrpc":"2.0","id":`
		content = `,"result":{"content":[{"type":"text","text":`
		isError = `,"isError":true`
		sc      = `,"structuredContent":`
	)
	n := len(head) + len(idJSON) + len(content) + len(textJSON) + len("}]") + len("}}\n")
	if res.IsError {
		n += len(isError)
	}
	if res.StructuredContent != nil {
		n += len(sc) + len(structured)
	}
	out := make([]byte, 0, n)
	out = append(out, head...)
	out = append(out, idJSON...)
	out = append(out, content...)
	out = append(out, textJSON...)
	out = append(out, "}]"...)
	if res.IsError {
		out = append(out, isError...)
	}
	if res.StructuredContent != nil {
		out = append(out, sc...)
		out = append(out, structured...)
	}
	out = append(out, "}}\n"...)
	return out, true
}

// htmlEscape applies encoding/json's HTML escaping to compact JSON, as
// json.Marshal does to a json.RawMessage.
func htmlEscape(s string) string {
	if !needsHTMLEscape(s) {
		return s
	}
	var out bytes.Buffer
	json.HTMLEscape(&out, []byte(s))
	return out.String()
}

// needsHTMLEscape reports whether s holds <, >, & or U+2028 or U+2029,
// which encoding/json escapes.
func needsHTMLEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9):
			return true
		}
	}
	return false
}

// envelopeKeysOnly reports whether the valid JSON body is an object whose
// keys are only jsonrpc, id, method and params, and whose params, when an
// object, has only name and arguments: each spelled exactly, without
// escapes.
func envelopeKeysOnly(body []byte) bool {
	return objectMembers(body, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc", "id", "method":
			return true
		case "params":
			if val[0] != '{' {
				return true // null: no params; anything else json.Unmarshal refused
			}
			return objectMembers(val, func(key, _ []byte) bool {
				return string(key) == "name" || string(key) == "arguments"
			})
		}
		return false
	})
}

// objectMembers calls visit with the key (as written, without its quotes)
// and the raw value of each member of the JSON object b, which must be
// valid JSON, in order. It reports false when b is not an object, a key
// holds an escape or visit returns false.
func objectMembers(b []byte, visit func(key, val []byte) bool) bool {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = skipJSONSpace(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) && b[i] == '"' {
		end := skipJSONString(b, i)
		if end < 0 {
			return false
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		if i = skipJSONSpace(b, end); i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipJSONSpace(b, i+1)
		end = skipJSONValue(b, i)
		if end <= i || !visit(key, b[i:end]) {
			return false
		}
		switch i = skipJSONSpace(b, end); {
		case i < len(b) && b[i] == '}':
			return true
		case i < len(b) && b[i] == ',':
			i = skipJSONSpace(b, i+1)
		default:
			return false
		}
	}
	return false
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipJSONString returns the index just past the string starting at b[i]
// (a quote), or -1 if it does not end.
func skipJSONString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipJSONValue returns the index just past the valid JSON value starting
// at b[i], or -1 if it does not end.
func skipJSONValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end := skipJSONString(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// numbersFitFloat reports whether every number in the valid JSON raw
// decodes into a float64. Only a number with an exponent or hundreds of
// digits can overflow, so the full decode runs only when one is present.
func numbersFitFloat(raw json.RawMessage) bool {
	inString, escaped, risky, run := false, false, false, 0
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString, run = true, 0
		case c == 'e' || c == 'E':
			if run > 0 {
				risky = true
			}
		case c >= '0' && c <= '9' || c == '-' || c == '.' || c == '+':
			run++
			if run > 300 {
				risky = true
			}
		default:
			run = 0
		}
	}
	if !risky {
		return true
	}
	var v any
	return json.Unmarshal(raw, &v) == nil
}

// errorReader returns err after the bytes before it.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// cancelKey names a call for notifications/cancelled: the caller and the
// request id as mcp-go prints it. Calls of one caller only can be ended.
func cancelKey(ctx context.Context, id any) string {
	p, _ := relay.PrincipalFrom(ctx)
	var ids string
	switch v := id.(type) {
	case string:
		ids = v
	case float64:
		ids = strconv.FormatFloat(v, 'g', -1, 64) // as %v writes it
	default:
		ids = fmt.Sprint(v)
	}
	return string(p.Kind) + "\x00" + p.Slug + "\x00" + p.RunTaskID + "\x00" + ids
}

// track registers a running call under key; the returned func removes it.
func (h *leanHandler) track(key string, cancel context.CancelFunc) func() {
	c := &leanInflight{cancel: cancel}
	h.mu.Lock()
	h.inflight[key] = append(h.inflight[key], c)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		list := h.inflight[key]
		for i, x := range list {
			if x == c {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(h.inflight, key)
		} else {
			h.inflight[key] = list
		}
	}
}

// noteCancel ends the caller's lean calls named by a notifications/cancelled
// body; mcp-go then answers the notification (and ends its own calls).
func (h *leanHandler) noteCancel(r *http.Request, body []byte) {
	if !bytes.Contains(body, []byte(mcp.MethodNotificationCancelled)) {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &n) != nil || n.Method != string(mcp.MethodNotificationCancelled) || n.Params.RequestID == nil {
		return
	}
	key := cancelKey(r.Context(), n.Params.RequestID)
	h.mu.Lock()
	list := append([]*leanInflight(nil), h.inflight[key]...)
	h.mu.Unlock()
	for _, c := range list {
		c.cancel()
	}
}
