package mcp

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// annotate sets all four behaviour hints explicitly. mcp.NewTool defaults to
// destructive and open-world, so a tool that set only some hints would
// advertise the wrong ones; every tool goes through here instead. No tool
// reaches outside the relay, so openWorldHint is always false.
func annotate(title string, readOnly, destructive, idempotent bool) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(readOnly),
		DestructiveHint: mcp.ToBoolPtr(destructive),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// newTool builds a tool with a title (shown by clients), a description and
// the given hints and parameters.
func newTool(name, title, description string, hints mcp.ToolOption, params ...mcp.ToolOption) mcp.Tool {
	opts := append([]mcp.ToolOption{
		mcp.WithToolTitle(title),
		mcp.WithDescription(description),
		hints,
	}, params...)
	return mcp.NewTool(name, opts...)
}

const slugRule = "2–80 characters: lowercase letters, digits, dots, underscores, colons and hyphens, starting with a letter or digit (trimmed and lowercased first)."

// selfSlug is an optional parameter naming the caller itself.
func selfSlug(field, role string) mcp.ToolOption {
	return mcp.WithString(field, mcp.Description(fmt.Sprintf(
		"Your own agent slug, acting as %s. Leave it out when you use a per-agent token: the token already names you, and a different slug is refused with identity_mismatch. Required with the admin token (slug_required otherwise). %s", role, slugRule)))
}

// taskIDParam is the required taskId parameter.
func taskIDParam(description string) mcp.ToolOption {
	return mcp.WithString("taskId", mcp.Required(), mcp.Description(description+" A task id (UUID) as returned by post_task, claim_next_task or get_task."), format("uuid"))
}

// longTextParam is a required text parameter of up to 40,000 characters.
func longTextParam(field, description string) mcp.ToolOption {
	return mcp.WithString(field, mcp.Required(), mcp.Description(description), mcp.MinLength(1), mcp.MaxLength(relay.MaxLongText))
}

// leaseParam is the optional leaseSeconds parameter.
func leaseParam(description string) mcp.ToolOption {
	return mcp.WithInteger("leaseSeconds", mcp.Description(description),
		mcp.Min(relay.MinLeaseSeconds), mcp.Max(relay.MaxLeaseSeconds), mcp.DefaultNumber(relay.DefaultLeaseSeconds))
}

func format(f string) mcp.PropertyOption {
	return func(schema map[string]any) { schema["format"] = f }
}

func intEnum(values ...int) mcp.PropertyOption {
	return func(schema map[string]any) { schema["enum"] = values }
}

// unauthorized is the answer to a call that reached the handler without a
// principal; the web layer normally refuses those with 401 first.
func unauthorized() error {
	return relay.Errorf(relay.EUnauthorized, "Send Authorization: Bearer <admin token or per-agent token>.")
}

// principal returns the caller set by the HTTP auth layer.
func principal(ctx context.Context) (relay.Principal, error) {
	p, ok := relay.PrincipalFrom(ctx)
	if !ok {
		return p, unauthorized()
	}
	switch {
	case p.Kind == relay.PrincipalAdmin:
	case p.Kind == relay.PrincipalAgent && p.Slug != "":
	default:
		return p, unauthorized()
	}
	return p, nil
}

// toolFunc is a tool's body: it gets the caller and the arguments, and returns
// a result or an error that the errorResults middleware turns into a tool
// error.
type toolFunc func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error)

// handler adapts fn to mcp-go: it checks the principal and parses arguments.
func handler(fn toolFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, release := toolContext(ctx)
		defer release()
		p, err := principal(ctx)
		if err != nil {
			return nil, err
		}
		return fn(ctx, p, parseArgs(req))
	}
}
