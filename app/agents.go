package app

import (
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Agents manages agents and their tokens for the operator.
type Agents struct{ c *core }

// TokenReveal is a freshly issued token, shown once, with ready-made client
// configurations and the agent's working rules.
type TokenReveal struct {
	Agent        relay.Agent `json:"agent"`
	Token        string      `json:"token"`
	MCPURL       string      `json:"mcpUrl"`
	Setup        web.Setup   `json:"setup"`
	Instructions string      `json:"instructions"`
}

// List returns every agent, offline ones and the operator included.
func (a *Agents) List() ([]relay.Agent, error) {
	svc, ctx, err := a.c.get()
	if err != nil {
		return nil, err
	}
	return svc.ListAgents(ctx, true)
}

// Create adds an agent; agents (not humans) get a token, revealed once
// with the relay's address (see address.go).
func (a *Agents) Create(in relay.CreateAgentInput) (TokenReveal, error) {
	return a.CreateAt(in, "")
}

// CreateAt is Create for a dashboard reached at origin ("" when unknown):
// the reveal names that address when the relay allows it (see address.go).
func (a *Agents) CreateAt(in relay.CreateAgentInput, origin string) (TokenReveal, error) {
	svc, ctx, err := a.c.get()
	if err != nil {
		return TokenReveal{}, err
	}
	agent, token, err := svc.CreateAgent(ctx, in)
	if err != nil {
		return TokenReveal{}, err
	}
	return a.reveal(agent, token, origin), nil
}

// Update sets (and locks) an agent's display name and/or role. An empty
// role clears it and lets the agent set its own again.
func (a *Agents) Update(slug string, in relay.ProfileUpdate) (relay.Agent, error) {
	svc, ctx, err := a.c.get()
	if err != nil {
		return relay.Agent{}, err
	}
	return svc.UpdateProfile(ctx, slug, in)
}

// RotateToken issues a new token, invalidating the old one.
func (a *Agents) RotateToken(slug string) (TokenReveal, error) {
	return a.RotateTokenAt(slug, "")
}

// RotateTokenAt is RotateToken for a dashboard reached at origin, as for CreateAt.
func (a *Agents) RotateTokenAt(slug, origin string) (TokenReveal, error) {
	svc, ctx, err := a.c.get()
	if err != nil {
		return TokenReveal{}, err
	}
	token, err := svc.IssueToken(ctx, slug)
	if err != nil {
		return TokenReveal{}, err
	}
	agent, err := svc.GetAgent(ctx, slug)
	if err != nil {
		return TokenReveal{}, err
	}
	return a.reveal(agent, token, origin), nil
}

// RevokeToken removes an agent's token; it can no longer connect.
func (a *Agents) RevokeToken(slug string) (relay.Agent, error) {
	svc, ctx, err := a.c.get()
	if err != nil {
		return relay.Agent{}, err
	}
	if err := svc.RevokeToken(ctx, slug); err != nil {
		return relay.Agent{}, err
	}
	return svc.GetAgent(ctx, slug)
}

// Retire revokes an agent's token and retires it: it leaves the agent
// lists and gets no new tasks, keeping its name (nobody else takes it) and
// its tasks; its worker is turned off and stops claiming (a run in progress
// ends on its own, its task blocked). `crosschat-relay projects remove`
// retires a project's agent.
func (a *Agents) Retire(slug string) error {
	svc, ctx, err := a.c.get()
	if err != nil {
		return err
	}
	if slug, err = relay.NormalizeSlug("slug", slug); err != nil {
		return err
	}
	if err := svc.RetireAgent(ctx, slug); err != nil {
		return err
	}
	if err := a.c.reloadWorkersHook()(ctx, []string{slug}); err != nil {
		return fmt.Errorf("agent %s retired, but its worker did not stop: %w", slug, err)
	}
	return nil
}

// Reinstate brings a retired agent back with a new token, revealed once
// (`crosschat-relay register` on the folder of a removed project).
func (a *Agents) Reinstate(slug string) (TokenReveal, error) {
	svc, ctx, err := a.c.get()
	if err != nil {
		return TokenReveal{}, err
	}
	token, err := svc.ReinstateAgent(ctx, slug)
	if err != nil {
		return TokenReveal{}, err
	}
	agent, err := svc.GetAgent(ctx, slug)
	if err != nil {
		return TokenReveal{}, err
	}
	return a.reveal(agent, token, ""), nil
}

// Delete removes an agent that has no open tasks. Its worker stops and is
// removed at once, and every worker that took tasks from it no longer does
// (so whoever enrolls under the slug next inherits neither).
func (a *Agents) Delete(slug string) error {
	svc, ctx, err := a.c.get()
	if err != nil {
		return err
	}
	if slug, err = relay.NormalizeSlug("slug", slug); err != nil {
		return err
	}
	if err := svc.DeleteAgent(ctx, slug); err != nil {
		return err
	}
	if reload := a.c.agentDeletedHook(); reload != nil {
		if err := reload(ctx, slug); err != nil {
			return fmt.Errorf("agent %s deleted, but its workers did not reload: %w", slug, err)
		}
	}
	return nil
}

func (a *Agents) reveal(agent relay.Agent, token, origin string) TokenReveal {
	r := TokenReveal{Agent: agent, Token: token, Instructions: AgentInstructions(agent.Slug)}
	if token != "" {
		r.MCPURL = a.c.reachedURL(origin) + "/mcp"
		r.Setup = web.SetupFor(r.MCPURL, token)
	}
	return r
}
