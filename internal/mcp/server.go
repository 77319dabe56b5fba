package mcp

import (
	"context"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ServerName is the name the relay reports in the MCP handshake.
const ServerName = "crosschat-relay"

// Options configure the MCP handler.
type Options struct {
	// Version is the server version reported to clients ("dev" when empty).
	Version string
	// Logger receives failures of tools and of the transport; nil means
	// slog.Default().
	Logger *slog.Logger
	// Observer, when set, is told about every tool call (metrics).
	Observer ToolObserver
}

// Handler is the relay's MCP endpoint.
type Handler struct{ *leanHandler }

// NewHandler returns the relay's MCP endpoint: the 14 tools and the
// crosschat://protocol resource over stateless streamable HTTP.
//
// Mount it at exactly /mcp behind the authentication middleware, which must
// put a relay.Principal in the request context (relay.WithPrincipal); without
// one every tool answers an unauthorized error result. No session is kept:
// each POST is served on its own, so a tools/call needs no initialize first.
// GET answers 405, as a stateless server has nothing to stream.
//
// A plain tools/call (the pre-2026-07-28 protocol, no _meta) takes the lean
// path (lean.go): the same tool handlers and middleware, the same bytes, a
// fraction of mcp-go's cost per request. Everything else is mcp-go's.
//
// A tool call always answers with a result. Failures carry isError and the
// text {"error": code, "message": ..., "details"?: ...}; successes carry the
// compact JSON of the value as text and the value as structuredContent.
//
// Long-polls (claim_next_task with waitMs) run on the request's context, so
// they end when the client goes away, and when the server cancels request
// contexts to shut down, in which case the claim still answers idle. They
// also end when svc is closed.
func NewHandler(svc relay.Service, opts Options) *Handler {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	ts := tools(svc)
	mws := middleware(logger, opts.Observer)
	lib := keepAnswering(server.NewStreamableHTTPServer(newServer(ts, mws, version),
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		server.WithStreamableHTTPLogger(libLogger(logger)),
		// internal/web checks Host and Origin against the operator's
		// allow-lists before this handler runs; mcp-go's own loopback guard
		// would also refuse allowed names (e.g. behind a local reverse proxy).
		server.WithDisableLocalhostProtection(true),
	), logger)
	return &Handler{newLeanHandler(lib, ts, mws, logger)}
}

// middleware is the tool middleware, first outermost, for mcp-go and the
// lean path alike: errorResults, then the observer (when set), which so
// sees an error before it becomes an error result.
func middleware(logger *slog.Logger, o ToolObserver) []server.ToolHandlerMiddleware {
	mws := []server.ToolHandlerMiddleware{errorResults(logger)}
	if o != nil {
		mws = append(mws, observed(o))
	}
	return mws
}

// newServer builds the MCP server with the tools, their middleware and the
// protocol resource.
func newServer(ts []server.ServerTool, mws []server.ToolHandlerMiddleware, version string) *server.MCPServer {
	opts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
	}
	for _, mw := range mws {
		opts = append(opts, server.WithToolHandlerMiddleware(mw))
	}
	s := server.NewMCPServer(ServerName, version, opts...)
	s.AddTools(ts...)
	s.AddResource(protocolResource())
	return s
}

// protocolResource is crosschat://protocol, the rules agents follow.
func protocolResource() (mcp.Resource, server.ResourceHandlerFunc) {
	res := mcp.NewResource(ProtocolURI, "relay-protocol",
		mcp.WithResourceTitle("Crosschat relay protocol"),
		mcp.WithResourceDescription("How agents use this relay: register once, claim one task at a time under a lease, report only what changes a decision, read updates without acknowledging them, and hand work back with release, requeue or request_changes."),
		mcp.WithMIMEType("text/markdown"),
	)
	return res, func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{
			URI:      ProtocolURI,
			MIMEType: "text/markdown",
			Text:     ProtocolMarkdown(),
		}}, nil
	}
}
