package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// maxResponse bounds how much of one response is read.
const maxResponse = client.MaxToolResponse

// Client speaks MCP to one relay as raw JSON-RPC over HTTP (stateless
// streamable HTTP: every POST /mcp is a tools/call, no initialize), and
// calls the admin bridge. It is safe for concurrent use.
type Client struct {
	base string
	http *http.Client // the bridge and /health
	mcp  *connPool    // tool calls (conn.go)
	err  error        // why base cannot be used for tool calls
	ids  atomic.Int64
}

// NewClient returns a client for the relay at baseURL (e.g.
// http://127.0.0.1:4318). Connections are kept alive and pooled for up to
// conns concurrent requests.
func NewClient(baseURL string, conns int) *Client {
	if conns < 2 {
		conns = 2
	}
	tr := &http.Transport{
		Proxy:               nil, // loopback only: never through a proxy
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	base := strings.TrimRight(baseURL, "/")
	pool, err := newConnPool(base, conns)
	return &Client{base: base, http: &http.Client{Transport: tr}, mcp: pool, err: err}
}

// Close releases idle connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	if c.mcp != nil {
		c.mcp.close()
	}
}

// ToolError is client.ToolError: a tool result with isError set whose text
// is not the relay's envelope.
type ToolError = client.ToolError

// Tool calls the MCP tool name with args as the bearer token and decodes
// the JSON text of its result into out (which may be nil), as
// client.Agent.Tool does, over the bench's own connections. A refusal comes
// back as *relay.Error (or *ToolError when its text is not the relay's
// envelope); transport and protocol failures as wrapped errors.
func (c *Client) Tool(ctx context.Context, token, name string, args, out any) error {
	body, err := client.ToolRequest(c.ids.Add(1), name, args)
	if err != nil {
		return err
	}
	if c.err != nil {
		return fmt.Errorf("%s: %w", name, c.err)
	}
	resp, err := c.mcp.post(ctx, "/mcp", "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer "+token+"\r\n", body)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return client.ToolResult(name, resp.status, resp.ctype, resp.body, out)
}

// Bridge calls POST /bridge/<service>.<method> with the admin token and the
// positional args, decoding the result into out (which may be nil).
// Refusals come back as *relay.Error.
func (c *Client) Bridge(ctx context.Context, adminToken, service, method string, out any, args ...any) error {
	if args == nil {
		args = []any{}
	}
	body, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%s.%s: encode arguments: %w", service, method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bridge/"+service+"."+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s.%s: build request: %w", service, method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", service, method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s.%s: read response: %w", service, method, err)
	}
	if resp.StatusCode != http.StatusOK {
		var re relay.Error
		if json.Unmarshal(data, &re) == nil && re.Code != "" {
			return &re
		}
		return fmt.Errorf("%s.%s: HTTP %d: %s", service, method, resp.StatusCode, client.Snippet(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s.%s: decode result: %w", service, method, err)
	}
	return nil
}

// Health reports whether GET /health answers 200.
func (c *Client) Health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/health", nil)
	if err != nil {
		return fmt.Errorf("health: build request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: HTTP %d", resp.StatusCode)
	}
	return nil
}

// WaitHealthy polls /health until it answers 200 or ctx ends, and returns
// how long that took.
func (c *Client) WaitHealthy(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	delay := time.Millisecond
	for {
		err := c.Health(ctx)
		if err == nil {
			return time.Since(start), nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("relay not healthy: %w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// isCanceled reports whether err comes from a context ending.
func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
