package mcp

// The lean path's encoder (lean.go): a tool's answer, byte for byte as
// mcp-go writes it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// answerCall is the HTTP status and body answering the call with what its
// tool returned, the body appended to dst.
func answerCall(dst []byte, c leanCall, res *mcp.CallToolResult, err error) (int, []byte) {
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
	b, err := encodeResponse(dst, c.id, res, resp)
	if err != nil {
		return http.StatusInternalServerError, append(dst, "encode response: "+err.Error()...)
	}
	return http.StatusOK, b
}

// encodeResponse appends json.NewEncoder(w).Encode(resp) to dst, as mcp-go
// writes it. The common result (one plain text content, raw structured
// content) is written directly; the rest goes through encoding/json.
func encodeResponse(dst []byte, id any, res *mcp.CallToolResult, resp mcp.JSONRPCMessage) ([]byte, error) {
	if b, ok := encodeResult(dst, id, res); ok {
		return b, nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return dst, err
	}
	return append(append(dst, b...), '\n'), nil
}

// encodeResult writes {"jsonrpc":"2.0","id":…,"result":{"content":[{"type":
// "text","text":…}],"isError"?:true,"structuredContent":…}} and a newline,
// with encoding/json's escaping (HTML characters, U+2028, U+2029), for a
// result with exactly one plain text content and raw or no structured
// content, appended to dst. ok is false for any other result. The id and
// the text are encoded in a pooled buffer.
func encodeResult(dst []byte, id any, res *mcp.CallToolResult) ([]byte, bool) {
	if res == nil || res.Meta != nil || res.ResultType != "" || len(res.InputRequests) > 0 || res.RequestState != "" ||
		len(res.RawStructuredContent) > 0 || len(res.Content) != 1 {
		return dst, false
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok || text.Annotations != nil || text.Meta != nil || text.Type != "text" {
		return dst, false
	}
	var structured string
	switch sc := res.StructuredContent.(type) {
	case nil:
	case compactRaw:
		if sc == "" {
			return dst, false
		}
		structured = htmlEscape(string(sc))
	case json.RawMessage:
		var b bytes.Buffer
		if json.Compact(&b, sc) != nil {
			return dst, false
		}
		structured = htmlEscape(b.String())
	default:
		b, err := json.Marshal(sc)
		if err != nil {
			return dst, false
		}
		structured = string(b)
	}
	e := getEncoder(true)
	defer e.put()
	if e.enc.Encode(id) != nil {
		return dst, false
	}
	idEnd := e.buf.Len() - 1 // Encode ends each value with a newline
	if e.enc.Encode(text.Text) != nil {
		return dst, false
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
	out := slices.Grow(dst, n)
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
