package store_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// A retired agent loses its token, leaves every agent list and gets no new
// task, while its name stays taken and its tasks stay; only a retired
// agent is reinstated, with a new token that works.
func TestRetireAndReinstate(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	task := e.post("alice", "bob", "kept", 0)
	_, tok, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "web", DisplayName: "web", ModelSlug: "live-session", Capabilities: []string{"text-input"}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.db.RetireAgent(e.ctx, "operator"), relay.EInvalidAgentKind)
	_, err = e.db.ReinstateAgent(e.ctx, "bob")
	wantCode(t, err, relay.EInvalidRequest)

	for _, slug := range []string{"bob", "web"} {
		if err := e.db.RetireAgent(e.ctx, slug); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.db.RetireAgent(e.ctx, "bob"); err != nil {
		t.Fatalf("retiring a retired agent: %v", err)
	}
	for _, online := range []bool{true, false} {
		agents, err := e.db.ListAgents(e.ctx, !online)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range agents {
			if a.Slug == "bob" || a.Slug == "web" {
				t.Errorf("ListAgents(%v) lists the retired %s", !online, a.Slug)
			}
		}
	}
	bob, err := e.db.GetAgent(e.ctx, "bob")
	if err != nil || bob.RetiredAt == "" || bob.HasToken {
		t.Fatalf("the retired bob: %+v %v", bob, err)
	}
	if _, err := e.db.Authenticate(e.ctx, tok); relay.ErrorCode(err) != relay.EUnauthorized {
		t.Fatalf("a retired agent's token authenticates: %v", err)
	}
	_, err = e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "new", Instructions: "x"})
	wantCode(t, err, relay.EUnknownAgent)
	_, _, err = e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "bob", DisplayName: "Squatter", ModelSlug: "m", Capabilities: []string{"text-input"}})
	wantCode(t, err, relay.EAgentExists)
	if kept, err := e.db.Task(e.ctx, task.ID); err != nil || kept.RecipientSlug != "bob" || kept.Status != relay.StatusQueued {
		t.Fatalf("the retired agent's task: %+v %v", kept, err)
	}

	tok, err = e.db.ReinstateAgent(e.ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.db.Authenticate(e.ctx, tok); err != nil || p.Slug != "web" {
		t.Fatalf("the reinstated token: %+v %v", p, err)
	}
	if web, err := e.db.GetAgent(e.ctx, "web"); err != nil || web.RetiredAt != "" || !web.HasToken {
		t.Fatalf("the reinstated web: %+v %v", web, err)
	}
}
