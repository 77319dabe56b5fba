package mcp

// The agent tools: whoami, register_agent, list_agents, heartbeat.

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// adminNote is whoami's answer for the admin token.
const adminNote = "This is the admin token. It can act as any agent, so every tool that takes a slug (slug, agentSlug, senderSlug, recipientSlug, reporterSlug, requesterSlug) needs it passed explicitly."

type whoamiAgent struct {
	Kind  string      `json:"kind"`
	Agent relay.Agent `json:"agent"`
	// RunTaskID is set for a worker run token: the task being run.
	RunTaskID string `json:"runTaskId,omitempty"`
}

type whoamiAdmin struct {
	Kind string `json:"kind"`
	Note string `json:"note"`
}

func whoami(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("whoami", "Who am I",
		"Tell who the token you connect with belongs to. For an agent token it returns {kind: \"agent\", agent} with your slug, profile and availability; for the admin token {kind: \"admin\", note}. Call it once after connecting to confirm your identity. It does not count as activity.",
		annotate("Who am I", true, false, true),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		if err := a.err(); err != nil {
			return nil, err
		}
		if p.Kind == relay.PrincipalAdmin {
			return success(whoamiAdmin{Kind: string(relay.PrincipalAdmin), Note: adminNote})
		}
		ag, err := svc.GetAgent(ctx, p.Slug)
		if err != nil {
			return nil, fmt.Errorf("whoami %s: %w", p.Slug, err)
		}
		return success(whoamiAgent{Kind: string(relay.PrincipalAgent), Agent: agentOut(ag), RunTaskID: p.RunTaskID})
	})
}

func registerAgent(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("register_agent", "Register agent",
		"Register yourself on the relay, or update your profile: display name, model, capabilities and an optional one-line role. Call it once at the start of a session. Re-registering with the same values changes nothing; a name or role the relay owner set and locked is kept. Returns your agent profile.",
		annotate("Register agent", false, false, true),
		selfSlug("slug", "the agent to register"),
		mcp.WithString("displayName", mcp.Required(), mcp.Description("A short human-readable name shown to people and other agents."), mcp.MinLength(1), mcp.MaxLength(relay.MaxShortText)),
		mcp.WithString("modelSlug", mcp.Required(), mcp.Description("The model you run on, e.g. claude-sonnet-4 or gpt-5. Descriptive only; the slug is your address."), mcp.MinLength(1), mcp.MaxLength(relay.MaxShortText)),
		mcp.WithArray("capabilities", mcp.Required(),
			mcp.Description("What you can do, as labels. Tasks that require a capability you do not list cannot be assigned to you. Suggested: "+strings.Join(relay.DefaultCapabilities, ", ")+"."),
			mcp.WithStringItems(mcp.MinLength(1), mcp.MaxLength(relay.MaxCapability)),
			mcp.MinItems(1), mcp.MaxItems(relay.MaxCapabilities)),
		mcp.WithString("details", mcp.Description("Optional: one sentence on what you do (your role). Leave it out to keep the current one."), mcp.MaxLength(relay.MaxDetails)),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		in := relay.RegisterInput{
			DisplayName:  a.str("displayName"),
			ModelSlug:    a.str("modelSlug"),
			Capabilities: a.strings("capabilities", nil, relay.MaxCapabilities),
			Details:      a.optStr("details"),
		}
		if err := checkRunScope(ctx, svc, p, "register_agent", relay.RunNever, ""); err != nil {
			return nil, err
		}
		slug, err := a.actingAs(p, "slug")
		if err != nil {
			return nil, err
		}
		in.Slug = slug
		if in, err = in.Validate(); err != nil {
			return nil, err
		}
		ag, err := svc.RegisterAgent(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("register agent %s: %w", slug, err)
		}
		return success(agentOut(ag))
	})
}

func listAgents(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("list_agents", "List agents",
		"List the agents on the relay, ordered by slug, with their capabilities, role and availability, so you can pick a recipient for post_task. Only online agents unless includeOffline is true. The text result is the array; structuredContent wraps it as {agents}.",
		annotate("List agents", true, false, true),
		mcp.WithBoolean("includeOffline", mcp.Description("Also list agents that have not been seen recently."), mcp.DefaultBool(false)),
	)
	return t, handler(func(ctx context.Context, _ relay.Principal, a *args) (*mcp.CallToolResult, error) {
		includeOffline := a.boolean("includeOffline", false)
		if err := a.err(); err != nil {
			return nil, err
		}
		agents, err := svc.ListAgents(ctx, includeOffline)
		if err != nil {
			return nil, fmt.Errorf("list agents: %w", err)
		}
		out := make([]relay.Agent, 0, len(agents))
		for _, ag := range agents {
			out = append(out, agentOut(ag))
		}
		return successWrapped(out, "agents")
	})
}

func heartbeat(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("heartbeat", "Heartbeat",
		"Mark yourself as online without doing anything else. Most tools already do this; use it only during long stretches without other calls. Returns your agent profile.",
		annotate("Heartbeat", false, false, true),
		selfSlug("agentSlug", "the agent that is alive"),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		if err := checkRunScope(ctx, svc, p, "heartbeat", relay.RunNever, ""); err != nil {
			return nil, err
		}
		slug, err := a.actingAs(p, "agentSlug")
		if err != nil {
			return nil, err
		}
		ag, err := svc.Heartbeat(ctx, slug)
		if err != nil {
			return nil, fmt.Errorf("heartbeat %s: %w", slug, err)
		}
		return success(agentOut(ag))
	})
}

// agentOut gives an agent's capabilities as an empty array rather than null.
func agentOut(a relay.Agent) relay.Agent {
	if a.Capabilities == nil {
		a.Capabilities = []string{}
	}
	return a
}
