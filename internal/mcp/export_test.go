package mcp

import (
	"encoding/json"
	"net/http"
	"time"

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
	return encodeResponse(id, res, mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res))
}

// Success, SuccessWrapped and ErrorResult are the tools' result builders.
var (
	Success        = success
	SuccessWrapped = successWrapped
	ErrorResult    = errorResult
)

// Parked is how many calls h serves off net/http now (park.go), and
// ParkedSoFar how many it has.
func Parked(h *Handler) int64      { return h.nParked.Load() }
func ParkedSoFar(h *Handler) int64 { return h.tParked.Load() }

// TidyAfter makes h's tidier (tidy.go) notice a burst of step parked
// claims and tidy once they have been quiet for quiet; it returns how many
// times it has tidied. Call it before any claim parks.
func TidyAfter(h *Handler, step int64, quiet time.Duration) (tidies func() int64) {
	h.tidy.step, h.tidy.quiet = step, quiet
	return h.tidy.runs.Load
}

// MayWait reports whether a call of tool with these arguments is parked.
func MayWait(tool, args string) bool {
	return mayWait(leanCall{name: tool, args: json.RawMessage(args)})
}

// SetParkedWriteTimeout sets how long a parked answer may take to write,
// until the test ends.
func SetParkedWriteTimeout(t interface{ Cleanup(func()) }, d time.Duration) {
	old := parkedWriteTimeout
	parkedWriteTimeout = d
	t.Cleanup(func() { parkedWriteTimeout = old })
}
