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
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// leanHandler serves plain tools/call requests itself and hands everything
// else to lib (mcp-go's handler).
type leanHandler struct {
	lib   http.Handler
	tools map[string]server.ToolHandlerFunc // wrapped with the server's middleware
	log   *slog.Logger

	mu       sync.Mutex
	inflight map[string][]*leanInflight // cancel key → calls running under it
}

// leanInflight is one running call that notifications/cancelled can end.
type leanInflight struct{ cancel context.CancelFunc }

// newLeanHandler wraps lib. Each tool's handler is wrapped with mws the way
// mcp-go wraps it (the first middleware outermost).
func newLeanHandler(lib http.Handler, tools []server.ServerTool, mws []server.ToolHandlerMiddleware, log *slog.Logger) *leanHandler {
	h := &leanHandler{lib: lib, tools: make(map[string]server.ToolHandlerFunc, len(tools)), inflight: map[string][]*leanInflight{}, log: log}
	for _, t := range tools {
		fn := t.Handler
		for i := len(mws) - 1; i >= 0; i-- {
			fn = mws[i](fn)
		}
		h.tools[t.Tool.Name] = fn
	}
	return h
}

// leanCall is a tools/call request the lean path serves.
type leanCall struct {
	id   any // as mcp-go decodes it: a string or a float64
	name string
	// args are the arguments decoded when they are an object (nil for
	// none); raw holds any others as sent, for the tool to refuse.
	args *args
	raw  json.RawMessage
}

// ReadBody is a request body that was read whole already (the web layer
// reads and bounds it before authenticating): Bytes returns it, and the
// handler uses it as it is instead of reading a copy.
type ReadBody interface {
	io.ReadCloser
	Bytes() []byte
}

func (h *leanHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.lib.ServeHTTP(w, r)
		return
	}
	var body []byte
	rb, whole := r.Body.(ReadBody) // read already: r.Body is left unread, for mcp-go
	if whole {
		body = rb.Bytes()
	} else {
		var err error
		if body, err = readBody(r); err != nil {
			// mcp-go reports the read error itself.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errorReader{err}))
			h.lib.ServeHTTP(w, r)
			return
		}
	}
	if c, ok := h.parse(r.Header, body); ok {
		h.serveCall(w, r, c)
		return
	}
	h.noteCancel(r, body)
	if !whole {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
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
	if ct := hdr.Get("Content-Type"); ct != "application/json" { // the usual value, as it parses
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return leanCall{}, false
		}
	}
	if v := hdr.Get(mcp.HeaderProtocolVersion); v != "" && (!mcp.IsValidProtocolVersion(v) || mcp.IsModernProtocol(v)) {
		return leanCall{}, false
	}
	// One JSON value and nothing else, read as json.Unmarshal would decode
	// it, with no member mcp-go might read and the lean path would not.
	if !json.Valid(body) {
		return leanCall{}, false
	}
	env, ok := readEnvelope(body)
	if !ok || env.jsonrpc != mcp.JSONRPC_VERSION || env.method != string(mcp.MethodToolsCall) || !env.params {
		return leanCall{}, false
	}
	if _, ok := h.tools[env.name]; !ok {
		return leanCall{}, false
	}
	id, ok := requestID(env.id)
	if !ok {
		return leanCall{}, false
	}
	// mcp-go also decodes the arguments into an any, which fails only on a
	// number beyond float64; such a call gets mcp-go's answer.
	if !numbersFitFloat(env.arguments) {
		return leanCall{}, false
	}
	c := leanCall{id: id, name: env.name}
	switch raw := env.arguments; {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '{':
		// Decoded here, once: the tool reads these fields (args.go).
		fields, ok := argumentFields(raw)
		if !ok {
			return leanCall{}, false
		}
		c.args = &args{fields: fields}
	default:
		c.raw = raw
	}
	return c, true
}

// requestID decodes a JSON-RPC id as mcp-go does, into an any: a string, or
// a number as a float64. Anything else (null, an object, a number beyond
// float64) is left to mcp-go.
func requestID(raw json.RawMessage) (any, bool) {
	switch {
	case len(raw) == 0:
		return nil, false
	case raw[0] == '"':
		return jsonString(raw)
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		// encoding/json decodes a number into an any with this call.
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, err == nil
	}
	return nil, false
}

// serveCall runs the tool and writes mcp-go's answer for it. The tool runs
// on the request's goroutine and context: a long-poll ends when the client
// goes away or the server shuts down (and still answers), and when
// notifications/cancelled names its id from the same caller.
//
// A tool that registered something to undo when its answer does not reach
// the caller (a claim handed a task: see delivery.go) has it run when the
// write or its flush fails.
func (h *leanHandler) serveCall(w http.ResponseWriter, r *http.Request, c leanCall) {
	base, d := withDelivery(r.Context())
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	buf := answers.Get().(*[]byte)
	defer putAnswer(buf)
	status, body := h.run(ctx, cancel, r.Header, c, (*buf)[:0])
	*buf = body // written before serveCall returns: the next call's buffer
	if status != http.StatusOK {
		http.Error(w, string(body), status)
		d.finish(base, w, errNotAnswered, h.log)
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	if d.pending() {
		// Flushed before the handler returns: framed by its length, as
		// net/http frames an answer it sends whole.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(body) // the client may have gone: what waits on the answer is undone
	d.finish(base, w, err, h.log)
}

// jsonContentType is the Content-Type value of every answer, one slice
// shared by all of them rather than one that Header.Set makes for each.
// Headers are replaced or added to, never changed in place.
var jsonContentType = []string{"application/json"}

// errNotAnswered: the call's answer could not be encoded, so it never
// reached the caller.
var errNotAnswered = errors.New("the answer could not be encoded")

// run runs the call on ctx, which cancel ends (notifications/cancelled
// calls it), and returns the HTTP status and body of its answer: 200 with
// the JSON-RPC response, or 500 with the reason it could not be encoded.
// The answer is appended to dst.
func (h *leanHandler) run(ctx context.Context, cancel context.CancelFunc, hdr http.Header, c leanCall, dst []byte) (int, []byte) {
	done := h.track(cancelKey(ctx, c.id), cancel)
	defer done()
	res, err := h.tools[c.name](ctx, c.request(hdr))
	return answerCall(dst, c, res, err)
}

// answers are the buffers answers are encoded into, kept between calls:
// net/http's Write copies an answer or sends it before it returns, so a
// call's buffer is free again when its handler returns. The answer was the
// largest allocation of a call (about 1.3 KiB on the bench's lifecycle).
var answers = sync.Pool{New: func() any { return new([]byte) }}

// putAnswer returns buf to the pool unless it grew past maxPooledEncoder:
// a rare huge answer does not stay in memory for the next call.
func putAnswer(buf *[]byte) {
	if cap(*buf) <= maxPooledEncoder {
		*buf = (*buf)[:0]
		answers.Put(buf)
	}
}

// request is the call as mcp-go hands it to a tool, with hdr.
func (c leanCall) request(hdr http.Header) mcp.CallToolRequest {
	req := mcp.CallToolRequest{Header: hdr}
	req.Method = string(mcp.MethodToolsCall)
	req.Params.Name = c.name
	if c.args != nil {
		req.Params.Arguments = c.args
	}
	req.Params.RawArguments = c.raw
	return req
}

// errorReader returns err after the bytes before it.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }
