package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Claude Code channels: a stdio MCP server that declares this experimental
// capability may send ChannelMethod notifications; Claude Code hands each
// one to the model as a <channel source="…" key="value"…>content</channel>
// user message, which starts a turn by itself.
const (
	ChannelCapability = "claude/channel"
	ChannelMethod     = "notifications/claude/channel"
	// ChannelServerName is the name `crosschat-relay channel` reports; the
	// .mcp.json entry is usually called "crosschat" too.
	ChannelServerName = "crosschat"
)

// channelInstructions reach the model through the initialize result.
const channelInstructions = `This server is Crosschat Relay, a task inbox shared with other AI agents. Its tools are the relay's tools (your token names you, so leave every slug argument out).
Events from the relay arrive by themselves as <channel source="crosschat" …> messages:
- kind="task": a task another agent sent you. Call claim_next_task, do the work here with what you already know, then report_task (completed with the deliverable in result, or blocked with what you need). If you hand part of it to another agent, pass that task's id as parentTaskId: hand-offs are limited, and while you hold a task whatever you post counts as a hand-off of it.
- any other kind: news on a task you sent (claimed, progress, completed, blocked, requeued, cancelled). Act only when it needs you; never acknowledge or thank.
Never post a task to yourself.`

// ChannelOptions configure NewChannel.
type ChannelOptions struct {
	// MCPURL is the relay's MCP endpoint, e.g. http://127.0.0.1:4318/mcp.
	MCPURL string
	// Token is the agent's token, sent to the relay as a bearer token.
	Token string
	// Version is reported in the handshake ("dev" when empty).
	Version string
	// Stderr receives the stdio transport's diagnostics; nil discards them.
	Stderr io.Writer
	// Settle is how long after the client's first tools/list the first
	// notification waits; 0 means DefaultChannelSettle.
	Settle time.Duration
	// Session is the agent-CLI session the channel serves (Claude Code
	// gives the MCP servers it starts CLAUDE_CODE_SESSION_ID), "" for none.
	// Every call forwarded to the relay names it (relay.LiveSessionHeader),
	// so what the session posts is answered to it alone and counts as a hop
	// of the task it is handling.
	Session string
}

// DefaultChannelSettle is the wait between the client's first tools/list
// and the first channel notification. Claude Code registers its channel
// handler only after it listed the server's tools (about half a second
// later, measured with 2.1.197) and drops a notification that comes
// before; the MCP handshake gives no signal for that moment.
const DefaultChannelSettle = 2 * time.Second

// Channel is the stdio MCP server behind `crosschat-relay channel`: it
// proxies the relay's tools and resources and turns push events into
// Claude Code channel notifications.
type Channel struct {
	srv      *server.MCPServer
	upstream *mcpclient.Client
	stderr   io.Writer

	readyOnce   sync.Once
	ready       chan struct{} // closed Settle after the client's first tools/list
	settle      time.Duration
	mu          sync.Mutex
	session     string
	initialized bool // the client used the initialize handshake (legacy era)
}

// channelModernProblem is said on stderr when the client lists the tools
// without the initialize handshake.
const channelModernProblem = "this client connected with the 2026-07-28 MCP protocol, which cannot carry channel events, so none will reach the session. " +
	"Use `crosschat-relay monitor` with this CLI instead (docs/live-sessions.md)."

// ChannelOldestClaudeCode is the oldest Claude Code version channels were
// tested with (the pin of .ci/clis).
const ChannelOldestClaudeCode = "2.1.197"

// ChannelClientProblem is what `crosschat-relay channel` says on stderr
// about a client that cannot take channel events (any client but Claude
// Code) or may not (a Claude Code older than ChannelOldestClaudeCode); ""
// for a client that can.
func ChannelClientProblem(client mcp.Implementation) string {
	if client.Name != "claude-code" {
		return fmt.Sprintf("the client %q is not Claude Code: it gets the relay's tools, but channel events are a Claude Code feature and will not reach the session. "+
			"Use `crosschat-relay monitor` with this CLI instead (docs/live-sessions.md).", client.Name)
	}
	if v := client.Version; v != "" && olderVersion(v, ChannelOldestClaudeCode) {
		return fmt.Sprintf("Claude Code %s is older than %s, the oldest version channels were tested with; if no events reach the session, update Claude Code or use `crosschat-relay monitor` (docs/live-sessions.md).",
			v, ChannelOldestClaudeCode)
	}
	return ""
}

// olderVersion reports whether the x.y.z version a is before b; a version
// that is not x.y.z is never older.
func olderVersion(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 3), strings.SplitN(b, ".", 3)
	if len(pa) != 3 || len(pb) != 3 {
		return false
	}
	for i := range 3 {
		x, errX := strconv.Atoi(strings.TrimLeft(pa[i], "v"))
		y, errY := strconv.Atoi(pb[i])
		if errX != nil || errY != nil {
			// "0-beta" and the like: compare the leading digits only.
			x, y = leadingInt(pa[i]), leadingInt(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func leadingInt(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// NewChannel connects to the relay's MCP endpoint with the agent's token
// and builds a server that offers the same tools (and the protocol
// resource), each call forwarded to the relay.
func NewChannel(ctx context.Context, opts ChannelOptions) (*Channel, error) {
	if strings.TrimSpace(opts.Token) == "" {
		return nil, errors.New("channel: an agent token is required")
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	headers := map[string]string{"Authorization": "Bearer " + opts.Token}
	if opts.Session != "" {
		id, err := relay.LiveSessionID("session", opts.Session)
		if err != nil {
			return nil, fmt.Errorf("channel: %w", err)
		}
		headers[relay.LiveSessionHeader] = id
	}
	up, err := mcpclient.NewStreamableHttpClient(opts.MCPURL,
		transport.WithHTTPHeaders(headers),
		transport.WithHTTPTimeout(60*time.Second))
	if err != nil {
		return nil, fmt.Errorf("channel: relay client: %w", err)
	}
	c := &Channel{upstream: up, ready: make(chan struct{}), stderr: opts.Stderr, settle: opts.Settle}
	if c.settle <= 0 {
		c.settle = DefaultChannelSettle
	}
	if c.stderr == nil {
		c.stderr = io.Discard
	}
	if err := up.Start(ctx); err != nil {
		return nil, fmt.Errorf("channel: connect to %s: %w", opts.MCPURL, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "crosschat-relay-channel", Version: version}
	if _, err := up.Initialize(ctx, init); err != nil {
		up.Close()
		if errors.Is(err, transport.ErrAuthorizationRequired) {
			// The relay refused the token: a refusal its caller can tell.
			err = relay.Errorf(relay.EUnauthorized, "The relay does not know the token.")
		}
		return nil, fmt.Errorf("channel: initialize with %s: %w", opts.MCPURL, err)
	}
	tools, err := up.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		up.Close()
		return nil, fmt.Errorf("channel: list the relay's tools: %w", err)
	}
	// The token identifies the agent: check it now rather than at the first tool call.
	who, err := up.CallTool(ctx, callRequest("whoami", nil))
	if err != nil {
		up.Close()
		return nil, fmt.Errorf("channel: whoami: %w", err)
	}
	if who.IsError {
		up.Close()
		return nil, fmt.Errorf("channel: the relay refused the token: %s", resultText(who))
	}

	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		c.mu.Lock()
		c.session = s.SessionID()
		c.mu.Unlock()
	})
	c.srv = server.NewMCPServer(ChannelServerName, version,
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithExperimental(map[string]any{ChannelCapability: map[string]any{}}),
		server.WithInstructions(channelInstructions),
		server.WithHooks(hooks),
		server.WithRecovery(),
	)
	hooks.AddAfterInitialize(func(_ context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		c.mu.Lock()
		c.initialized = true
		c.mu.Unlock()
		if msg := ChannelClientProblem(req.Params.ClientInfo); msg != "" {
			fmt.Fprintln(c.stderr, "crosschat-relay channel: "+msg)
		}
	})
	hooks.AddAfterListTools(func(context.Context, any, *mcp.ListToolsRequest, *mcp.ListToolsResult) {
		c.mu.Lock()
		legacy := c.initialized
		c.mu.Unlock()
		c.readyOnce.Do(func() {
			if !legacy {
				// The client skipped initialize: it speaks the stateless
				// 2026-07-28 protocol, which has no path for unsolicited
				// notifications.
				fmt.Fprintln(c.stderr, "crosschat-relay channel: "+channelModernProblem)
			}
			time.AfterFunc(c.settle, func() { close(c.ready) })
		})
	})
	for _, t := range tools.Tools {
		c.srv.AddTool(t, c.forward(t.Name))
	}
	if res, err := up.ListResources(ctx, mcp.ListResourcesRequest{}); err == nil {
		for _, r := range res.Resources {
			c.srv.AddResource(r, c.forwardResource)
		}
	}
	return c, nil
}

// ToolCount is how many relay tools the channel serves.
func (c *Channel) ToolCount() int { return len(c.srv.ListTools()) }

// callRequest builds a tools/call request.
func callRequest(name string, args any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// resultText joins a result's text content.
func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// forward relays one tool call, keeping only its name and arguments.
func (c *Channel) forward(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := c.upstream.CallTool(ctx, callRequest(name, req.Params.Arguments))
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf(`{"error":"relay_unreachable","message":"The relay did not answer %s: %s"}`, name, strings.ReplaceAll(err.Error(), `"`, `'`))), nil
		}
		return res, nil
	}
}

// forwardResource relays a resource read.
func (c *Channel) forwardResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	var up mcp.ReadResourceRequest
	up.Params.URI = req.Params.URI
	res, err := c.upstream.ReadResource(ctx, up)
	if err != nil {
		return nil, fmt.Errorf("read %s from the relay: %w", req.Params.URI, err)
	}
	return res.Contents, nil
}

// ChannelProtocolVersions are the MCP revisions the channel offers over
// stdio: the legacy era only (initialize handshake, up to 2025-11-25).
// Claude Code 2.1.332 asks first with server/discover at 2026-07-28; offered
// that revision it settles on the modern era, which has no path for
// unsolicited notifications, and skips channel notifications ("Channel
// notifications skipped" in its MCP log). Offered only these, it falls back
// to initialize and registers the channel. Claude Code 2.1.197 never sends
// server/discover and is unaffected.
func ChannelProtocolVersions() []string { return mcp.LegacyProtocolVersions() }

// Serve speaks MCP on stdin/stdout until stdin ends or ctx is cancelled,
// offering only ChannelProtocolVersions.
func (c *Channel) Serve(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	s := server.NewStdioServer(c.srv)
	s.SetErrorLogger(log.New(c.stderr, "crosschat-relay channel: ", 0))
	s.SetContextFunc(func(ctx context.Context) context.Context {
		return server.WithSupportedProtocolVersions(ctx, ChannelProtocolVersions())
	})
	return s.Listen(ctx, stdin, stdout)
}

// Close ends the relay connection.
func (c *Channel) Close() error { return c.upstream.Close() }

// Notify sends one push event as a channel notification. It waits until
// the client is ready for one (Settle after its first tools/list: sent
// earlier, it would be dropped) and while the client's notification queue
// is full; it returns early only when ctx ends.
func (c *Channel) Notify(ctx context.Context, e relay.PushEvent) error {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	params := ChannelParams(e)
	for {
		c.mu.Lock()
		id := c.session
		c.mu.Unlock()
		err := c.srv.SendNotificationToSpecificClient(id, ChannelMethod, params)
		if !errors.Is(err, server.ErrNotificationChannelBlocked) {
			if err != nil {
				return fmt.Errorf("channel notification: %w", err)
			}
			return nil
		}
		select { // the client is slow to read; back off briefly
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ChannelParams are the notification's params for a push event: content in
// words the model can act on, and meta (task_id, sender, kind and, while
// the task is kept, conversation_id) that Claude Code shows as attributes
// of the <channel> tag.
func ChannelParams(e relay.PushEvent) map[string]any {
	var content string
	if e.IsTask() {
		content = fmt.Sprintf("New task from %s (priority %s): “%s”\n\n%s\n\nTask id %s. Claim it with claim_next_task, do it, then report_task with the result.",
			e.From, priorityWord(e.Priority), e.Title, e.Message, e.TaskID)
	} else {
		content = fmt.Sprintf("Update on the task “%s” (%s), from %s: %s\n\nTask id %s. Act only if it needs you.",
			e.Title, e.Kind, e.From, e.Message, e.TaskID)
	}
	meta := map[string]any{
		"task_id": e.TaskID,
		"sender":  e.From,
		"kind":    e.Kind,
	}
	if e.ConversationID != "" {
		meta["conversation_id"] = e.ConversationID
	}
	return map[string]any{"content": content, "meta": meta}
}

func priorityWord(p int) string {
	switch p {
	case 1:
		return "low"
	case 3:
		return "high"
	}
	return "normal"
}
