package mcp

import (
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// LibraryHandler is the mcp-go handler behind NewHandler's lean path.
func LibraryHandler(h http.Handler) http.Handler { return h.(*Handler).lib }

// LeanServes reports whether the lean path serves a request with these
// headers and body itself.
func LeanServes(h http.Handler, hdr http.Header, body []byte) bool {
	_, ok := h.(*Handler).parse(hdr, body)
	return ok
}

// EncodeLean is the lean path's encoding of a tools/call answer.
func EncodeLean(id any, res *mcp.CallToolResult) ([]byte, error) {
	return encodeResponse(nil, id, res, mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res))
}

// Success, SuccessWrapped and ErrorResult are the tools' result builders.
var (
	Success        = success
	SuccessWrapped = successWrapped
	ErrorResult    = errorResult
)
