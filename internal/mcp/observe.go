package mcp

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ToolObserver is told about every tool call (the relay's metrics). Its
// methods must be quick and safe for concurrent use. Tool names are the
// relay's own: a call of an unknown tool never reaches it.
type ToolObserver interface {
	// ToolStarted is called as a tool call begins.
	ToolStarted(tool string)
	// ToolFinished is called as it ends: how long it took, and whether it
	// answered an error.
	ToolFinished(tool string, elapsed time.Duration, failed bool)
}

// observed times each tool call for o.
func observed(o ToolObserver) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			name := req.Params.Name
			o.ToolStarted(name)
			start := time.Now()
			defer func() {
				// A panic passes through (errorResults recovers it) and counts as a failure.
				o.ToolFinished(name, time.Since(start), err != nil || res == nil || res.IsError)
			}()
			return next(ctx, req)
		}
	}
}
