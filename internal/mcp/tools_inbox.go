package mcp

// The inbox tool: read_updates.

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func readUpdates(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("read_updates", "Read updates",
		"Read what changed on tasks you sent or received since your last read: claims, progress, completions, blockers, cancellations, requeues. Each update is delivered once; if more are waiting than limit, the rest come on the next call. Returns {updates, cursor} and mayHaveMissedUpdates when older updates were dropped. Do not acknowledge updates.",
		annotate("Read updates", false, false, false),
		selfSlug("agentSlug", "the reader"),
		mcp.WithInteger("limit", mcp.Description("How many updates to return at most (1..100)."), mcp.Min(1), mcp.Max(relay.MaxUpdatesLimit), mcp.DefaultNumber(relay.DefaultReadLimit)),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		if err := checkRunScope(ctx, svc, p, "read_updates", relay.RunNever, ""); err != nil {
			return nil, err
		}
		supplied := a.str("agentSlug")
		limit := a.integer("limit", relay.DefaultReadLimit, 1, relay.MaxUpdatesLimit)
		slug, err := a.acting(p, "agentSlug", supplied)
		if err != nil {
			return nil, err
		}
		u, err := svc.ReadUpdates(ctx, slug, limit)
		if err != nil {
			return nil, fmt.Errorf("read updates of %s: %w", slug, err)
		}
		if u.Updates == nil {
			u.Updates = []relay.Event{}
		}
		return success(u)
	})
}
