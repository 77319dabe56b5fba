package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// compactJSON encodes v without whitespace and without HTML escaping, as the
// upstream relay's JSON.stringify does.
func compactJSON(v any) (string, error) {
	e := getEncoder(false)
	defer e.put()
	if err := e.enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode tool result: %w", err)
	}
	return string(bytes.TrimRight(e.buf.Bytes(), "\n")), nil
}

// encoder is a JSON encoder with the buffer it writes to, kept in a pool so
// that encoding a result allocates only the copy it returns.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledEncoder is the largest buffer an encoder goes back to the pool
// with; a rare huge result does not stay in memory for the next call.
const maxPooledEncoder = 64 << 10

// getEncoder returns an empty encoder from the pool, escaping HTML
// characters as json.Marshal does, or not.
func getEncoder(escapeHTML bool) *encoder {
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	e.enc.SetEscapeHTML(escapeHTML)
	return e
}

// put returns e to the pool.
func (e *encoder) put() {
	if e.buf.Cap() <= maxPooledEncoder {
		encoders.Put(e)
	}
}

// success is a result whose text is the compact JSON of v and whose
// structured content is v itself. v must encode as a JSON object. It is
// encoded once: the structured content is the same string as the text.
func success(v any) (*mcp.CallToolResult, error) {
	s, err := compactJSON(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(s)},
		StructuredContent: compactRaw(s),
	}, nil
}

// compactRaw is structured content the relay encoded itself: compact, valid
// JSON. encoding/json writes it as it would a json.RawMessage; the lean
// path writes it without scanning it again. It is a string so that the text
// and the structured content of a result share their bytes.
type compactRaw string

// MarshalJSON returns c itself.
func (c compactRaw) MarshalJSON() ([]byte, error) { return []byte(c), nil }

// successWrapped serves results that are arrays: the text keeps the bare
// array (as the upstream relay sends it) while the structured content,
// which MCP requires to be an object, wraps it as {key: array}.
func successWrapped(v any, key string) (*mcp.CallToolResult, error) {
	s, err := compactJSON(v)
	if err != nil {
		return nil, err
	}
	k, err := compactJSON(key)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(s)},
		StructuredContent: compactRaw("{" + k + ":" + s + "}"),
	}, nil
}

// errorResult is the tool error for a domain error: isError with the compact
// JSON {"error", "message", "details"?} as text and as structured content.
func errorResult(e *relay.Error) *mcp.CallToolResult {
	s, err := compactJSON(e)
	if err != nil {
		// Details are plain maps of strings and numbers; if they ever fail to
		// encode, drop them rather than the error itself.
		e = &relay.Error{Code: e.Code, Message: e.Message}
		s, _ = compactJSON(e)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(s)},
		StructuredContent: e,
		IsError:           true,
	}
}

// errorResults is the tool middleware that gives every failure the relay's
// error envelope. Tool handlers return Go errors; a domain error becomes its
// own code, anything else (and a panic) becomes internal_error with the
// generic message, and the real cause is logged with the tool name. A tool
// call therefore always answers with a result, never a JSON-RPC error.
func errorResults(logger *slog.Logger) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			defer func() {
				if p := recover(); p != nil {
					logger.ErrorContext(ctx, "mcp tool panicked", "tool", req.Params.Name, "panic", p)
					res, err = errorResult(relay.AsError(fmt.Errorf("tool %s panicked: %v", req.Params.Name, p))), nil
				}
			}()
			res, err = next(ctx, req)
			return toolAnswer(ctx, logger, req.Params.Name, res, err), nil
		}
	}
}

// toolAnswer is the result a tool's return becomes: the result, or an error
// result for an error (logged unless it is a refusal or the request ended).
func toolAnswer(ctx context.Context, logger *slog.Logger, tool string, res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	if err == nil && res == nil {
		err = fmt.Errorf("tool %s returned no result", tool)
	}
	if err == nil {
		return res
	}
	switch {
	case relay.IsDomain(err):
	case ctx.Err() != nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client went away or the server is stopping; nobody
		// reads this answer.
		logger.DebugContext(ctx, "mcp tool ended with its request", "tool", tool, "err", err)
	default:
		logger.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
	}
	return errorResult(relay.AsError(err))
}
