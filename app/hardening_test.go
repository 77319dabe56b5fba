package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// padReader streams prefix, n bytes of 'x' and suffix without holding them.
type padReader struct {
	prefix, suffix string
	n              int
	off            int
}

func (p *padReader) Read(b []byte) (int, error) {
	total := len(p.prefix) + p.n + len(p.suffix)
	if p.off >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(b) && p.off < total {
		switch {
		case p.off < len(p.prefix):
			b[i] = p.prefix[p.off]
		case p.off < len(p.prefix)+p.n:
			b[i] = 'x'
		default:
			b[i] = p.suffix[p.off-len(p.prefix)-p.n]
		}
		i++
		p.off++
	}
	return i, nil
}

// TestTenMiBMCPBodyGets413AndHeapStaysBounded posts a 10 MiB JSON-RPC
// request (streamed, no Content-Length) to the real /mcp with a valid
// token: the relay answers 413 with a JSON-RPC error and allocates far less
// than the body's size.
func TestTenMiBMCPBodyGets413AndHeapStaysBounded(t *testing.T) {
	r := startRelay(t)
	token, err := r.Config().AdminToken(false)
	noErr(t, err)
	const size = 10 << 20
	send := func() (int, []byte) {
		body := &padReader{prefix: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, n: size, suffix: `"}}`}
		req, err := http.NewRequest(http.MethodPost, r.Config().MCPURL(), io.NopCloser(body))
		noErr(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			// The server may close the connection while the client still
			// writes; that is a refusal too, but the status is what we check.
			t.Fatalf("post: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, b
	}
	send() // warm up the connection pool and handler paths
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status, b := send()
	runtime.ReadMemStats(&after)
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %.200s", status, b)
	}
	var rpc struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &rpc); err != nil || rpc.JSONRPC != "2.0" || rpc.Error.Code == 0 || !strings.Contains(rpc.Error.Message, "too large") {
		t.Fatalf("not a JSON-RPC error: %s (%v)", b, err)
	}
	// Client and server share this process: everything both allocated for
	// the 10 MiB request stays well under its size.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6<<20 {
		t.Fatalf("the request allocated %d bytes for a %d-byte body", alloc, size)
	}
}
