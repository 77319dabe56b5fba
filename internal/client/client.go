// Package client calls a running relay's bridge over HTTP with the admin
// token: the CLI verbs use it so they never open the database file of a
// relay that is running. It also calls the relay's MCP tools as one agent
// (Agent: register, send) and reads its push stream (PushStream: monitor,
// channel).
//
// It imports only the standard library and internal/relay.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Client talks to one relay.
type Client struct {
	// BaseURL is e.g. http://127.0.0.1:4318.
	BaseURL string
	// Token is the admin token.
	Token string
	// HTTP defaults to a client with a 30 s timeout.
	HTTP *http.Client

	verifyMu sync.Mutex
	verified bool
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// New returns a client for baseURL with the admin token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// ErrNotRunning means nothing answered at the relay's address.
var ErrNotRunning = errors.New("no relay is running")

// notRunningHint ends the error of a relay that does not answer.
const notRunningHint = "start it with `crosschat-relay serve` (or the app), or name the one you run with --host/--port or CROSSCHAT_HOST/CROSSCHAT_PORT"

// Call invokes Service.Method on the bridge with args and decodes the result
// into out (which may be nil). Refusals come back as *relay.Error. The
// first call verifies the relay (see Verify) before the token is sent.
func (c *Client) Call(ctx context.Context, service, method string, out any, args ...any) error {
	if err := c.Verify(ctx); err != nil {
		return err
	}
	if args == nil {
		args = []any{}
	}
	body, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encode arguments: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/bridge/"+service+"."+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if connRefused(err) {
			return fmt.Errorf("%w at %s: %s", ErrNotRunning, c.BaseURL, notRunningHint)
		}
		return fmt.Errorf("call %s.%s: %w", service, method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read %s.%s response: %w", service, method, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e relay.Error
		if json.Unmarshal(data, &e) == nil && e.Code != "" {
			if e.Code == relay.EUnauthorized {
				e.Message += " (the admin token comes from CROSSCHAT_API_TOKEN or the api-token file in --data-dir)"
			}
			return &e
		}
		return fmt.Errorf("call %s.%s: HTTP %d: %s", service, method, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode %s.%s response: %w", service, method, err)
	}
	return nil
}

// The relay's MCP tools as one agent: the CLI verbs that act as a project's
// agent (register, send) call them with the agent's token, one stateless
// streamable-HTTP POST /mcp (a tools/call, no initialize) per call. The
// load generator (internal/bench) sends the same requests over its own
// connections and reads the answers with ToolRequest and ToolResult.

// MaxToolResponse bounds how much of one tool response is read.
const MaxToolResponse = 16 << 20

// Agent calls the relay's tools with an agent's token. It is safe for
// concurrent use.
type Agent struct {
	// BaseURL is e.g. http://127.0.0.1:4318.
	BaseURL string
	// Token is the agent's token (cca_…).
	Token string
	// Session, when set, is the live agent-CLI session the calls come from
	// (relay.LiveSessionHeader): a task posted through it gets the session
	// as its replySession, and a post while the session holds a task
	// continues that task's conversation (docs/live-sessions.md).
	Session string
	// HTTP defaults to a client with a 30 s timeout.
	HTTP *http.Client

	ids atomic.Int64
}

// NewAgent returns an Agent for the relay at baseURL with token, calling
// from the live session session ("" for none).
func NewAgent(baseURL, token, session string) *Agent {
	return &Agent{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, Session: session,
		HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Tool calls the tool name with args and decodes the JSON text of its
// result into out (which may be nil). A refusal comes back as *relay.Error
// (or *ToolError when its text is not the relay's envelope); transport and
// protocol failures as wrapped errors.
func (a *Agent) Tool(ctx context.Context, name string, args, out any) error {
	body, err := ToolRequest(a.ids.Add(1), name, args)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.BaseURL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: build request: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+a.Token)
	if a.Session != "" {
		req.Header.Set(relay.LiveSessionHeader, a.Session)
	}
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if connRefused(err) {
			return fmt.Errorf("%w at %s: start it with `crosschat-relay serve` (or the app)", ErrNotRunning, a.BaseURL)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxToolResponse))
	if err != nil {
		return fmt.Errorf("%s: read response: %w", name, err)
	}
	return ToolResult(name, resp.StatusCode, resp.Header.Get("Content-Type"), data, out)
}

// ToolError is a tool result with isError set whose text is not the
// relay's {error, message} envelope (e.g. an argument check by the MCP
// library).
type ToolError struct {
	Tool string
	Text string
}

func (e *ToolError) Error() string { return fmt.Sprintf("%s: tool error: %s", e.Tool, e.Text) }

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ToolRequest is the JSON-RPC body of a tools/call of name with args (nil:
// no arguments), numbered id.
func ToolRequest(id int64, name string, args any) ([]byte, error) {
	if args == nil {
		args = map[string]any{}
	}
	body, err := json.Marshal(rpcRequest{
		JSONRPC: "2.0", ID: id, Method: "tools/call",
		Params: map[string]any{"name": name, "arguments": args},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", name, err)
	}
	return body, nil
}

// ToolResult reads the answer to a tools/call of name (its HTTP status,
// content type and body) as Agent.Tool does, decoding the result's JSON
// text into out (which may be nil).
func ToolResult(name string, status int, contentType string, body []byte, out any) error {
	if status != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", name, status, Snippet(body))
	}
	msg, err := RPCMessage(contentType, body)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var rr rpcResponse
	if err := json.Unmarshal(msg, &rr); err != nil {
		return fmt.Errorf("%s: decode JSON-RPC response: %w", name, err)
	}
	if rr.Error != nil {
		return fmt.Errorf("%s: JSON-RPC error %d: %s", name, rr.Error.Code, rr.Error.Message)
	}
	if rr.Result == nil || len(rr.Result.Content) == 0 {
		return fmt.Errorf("%s: result has no content: %s", name, Snippet(msg))
	}
	text := rr.Result.Content[0].Text
	if rr.Result.IsError {
		var re relay.Error
		if json.Unmarshal([]byte(text), &re) == nil && re.Code != "" {
			return &re
		}
		return &ToolError{Tool: name, Text: text}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return fmt.Errorf("%s: decode result %s: %w", name, Snippet([]byte(text)), err)
	}
	return nil
}

// RPCMessage extracts the JSON-RPC message from an MCP response body: the
// body itself when it is JSON, or the last "data:" event of an SSE stream
// (comment and keep-alive lines are skipped; multi-line data is joined).
func RPCMessage(contentType string, body []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(body)
	if !strings.HasPrefix(contentType, "text/event-stream") && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return trimmed, nil
	}
	var last, cur []byte
	have := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), MaxToolResponse)
	flush := func() {
		if len(cur) > 0 {
			last, have = cur, true
		}
		cur = nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			flush()
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(cur) > 0 {
				cur = append(cur, '\n')
			}
			cur = append(cur, d...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read event stream: %w", err)
	}
	flush()
	if !have {
		return nil, fmt.Errorf("response is neither JSON nor an event stream with data: %s", Snippet(body))
	}
	return last, nil
}

// Snippet is the start of a response body for an error message: trimmed,
// at most 300 bytes, "(empty body)" when there is nothing.
func Snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty body)"
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
