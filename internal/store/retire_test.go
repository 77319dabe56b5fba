package store_test

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// A retired agent loses its token, leaves every agent list and gets no new
// task, while its name stays taken and its tasks stay (blocked); only a retired
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
	// Nor are they counted: operator, alice (all seen just now), bob and
	// web retired.
	if st, err := e.db.Stats(e.ctx); err != nil || st.Agents.Total != 2 || st.Agents.Online != 2 {
		t.Fatalf("the counts with two agents retired: %+v %v; want 2 of 2 online", st.Agents, err)
	}
	// No token for it either (the dashboard's Issue token gave one, which
	// claimed and reported while posts to it were refused).
	_, err = e.db.IssueToken(e.ctx, "bob")
	if wantCode(t, err, relay.EInvalidRequest); relay.AsError(err).Details["retired"] != true {
		t.Fatalf("a token issued to the retired bob: %v", err)
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
	if kept, err := e.db.Task(e.ctx, task.ID); err != nil || kept.RecipientSlug != "bob" || kept.Status != relay.StatusBlocked {
		t.Fatalf("the retired agent's task is kept, blocked: %+v %v", kept, err)
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

// Ensures a retired agent's open tasks do not wait for ever: queued and
// claimed ones are blocked with a report naming the agent, each sender gets
// a task-blocked update, and finished tasks and other agents' are left as
// they were. The sender may still requeue one, to wait for a reinstatement.
func TestRetireBlocksTheAgentsOpenTasks(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob", "carol")
	done := e.post("alice", "bob", "done", 0)
	e.mustClaim("bob")
	e.report("bob", done.ID, relay.ReportCompleted, "finished")
	claimed := e.post("carol", "bob", "claimed", 0)
	e.mustClaim("bob")
	queued := e.post("alice", "bob", "queued", 0)
	other := e.post("alice", "carol", "for carol", 0)
	e.updates("alice") // read: what follows is news
	e.updates("carol")

	if err := e.db.RetireAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id     string
		want   relay.TaskStatus
		sender string
	}{
		{done.ID, relay.StatusCompleted, ""},
		{claimed.ID, relay.StatusBlocked, "carol"},
		{queued.ID, relay.StatusBlocked, "alice"},
		{other.ID, relay.StatusQueued, ""},
	} {
		got := e.task(tt.id)
		if got.Status != tt.want {
			t.Errorf("%s: status %s, want %s", got.Title, got.Status, tt.want)
			continue
		}
		if tt.sender == "" {
			continue
		}
		last := got.Reports[len(got.Reports)-1]
		if last.Kind != relay.ReportBlocked || !strings.Contains(last.Message, "bob was retired") {
			t.Errorf("%s: last report %+v, want a blocker naming bob", got.Title, last)
		}
		if got.LeaseExpiresAt != "" {
			t.Errorf("%s: a blocked task keeps its lease %s", got.Title, got.LeaseExpiresAt)
		}
	}
	var blocked []string
	for _, ev := range e.updates("alice").Updates {
		if ev.Type == relay.EventTaskBlocked {
			blocked = append(blocked, ev.TaskID)
		}
	}
	if len(blocked) != 1 || blocked[0] != queued.ID {
		t.Errorf("alice's task-blocked updates %v, want just %s", blocked, queued.ID)
	}
	if ev := e.updates("carol").Updates; len(ev) == 0 || ev[len(ev)-1].Type != relay.EventTaskBlocked || ev[len(ev)-1].TaskID != claimed.ID {
		t.Errorf("carol was not told her claimed task is blocked: %+v", ev)
	}
	if got, err := e.db.RequeueTask(e.ctx, "alice", queued.ID, "wait for bob"); err != nil || got.Status != relay.StatusQueued {
		t.Errorf("the sender requeues a blocked task of a retired agent: %+v %v", got, err)
	}
}

// A retired agent runs nothing: retiring it turns its worker off, no
// worker is saved for it (that would turn it on again) and no run token is
// issued for it; reinstated, its worker stays off until saved again.
func TestRetiredAgentRunsNoWorker(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	e.saveWorker(workerConfig("bob"))
	task := e.post("alice", "bob", "for the worker", 0)
	running, err := e.db.IssueRunToken(e.ctx, "bob", task.ID, 600) // a run going on at the retirement
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.RetireAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Authenticate(e.ctx, running); relay.ErrorCode(err) != relay.EUnauthorized {
		t.Fatalf("the run token of a run going on at the retirement still acts for bob: %v", err)
	}
	if w, err := e.db.Worker(e.ctx, "bob"); err != nil || w.Enabled {
		t.Fatalf("the retired bob's worker: %+v %v; want it off", w, err)
	}
	_, err = e.db.SaveWorker(e.ctx, workerConfig("bob"))
	if wantCode(t, err, relay.EInvalidRequest); relay.AsError(err).Details["retired"] != true {
		t.Fatalf("a worker saved for the retired bob: %v", err)
	}
	off := workerConfig("bob")
	off.Enabled = false
	if w, err := e.db.SaveWorker(e.ctx, off); err != nil || w.Enabled {
		t.Fatalf("the retired bob's worker saved off: %+v %v; want it saved", w, err)
	}
	_, err = e.db.IssueRunToken(e.ctx, "bob", task.ID, 60)
	if wantCode(t, err, relay.EInvalidRequest); relay.AsError(err).Details["retired"] != true {
		t.Fatalf("a run token issued for the retired bob: %v", err)
	}
	if _, err := e.db.ReinstateAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if w, err := e.db.Worker(e.ctx, "bob"); err != nil || w.Enabled {
		t.Fatalf("the reinstated bob's worker: %+v %v; want it off until saved", w, err)
	}
	if w := e.saveWorker(workerConfig("bob")); !w.Enabled {
		t.Fatalf("saved again after the reinstatement: %+v", w)
	}
}

// An agent retired before migration 0024 kept an enabled worker and its run
// tokens: the migration turns the worker off and deletes the tokens, of
// retired agents only.
func TestMigrationTurnsRetiredWorkersOff(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	e.saveWorker(workerConfig("alice"))
	e.saveWorker(workerConfig("bob"))
	task := e.post("alice", "bob", "kept", 0)
	if err := e.db.RetireAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.IssueRunToken(e.ctx, "alice", task.ID, 600); err != nil {
		t.Fatal(err)
	}
	e.reopenAfter(undoMeshConversations + `UPDATE workers SET enabled = 1;
		INSERT INTO run_tokens (token_hash, agent_slug, task_id, expires_at) VALUES ('old-run', 'bob', '` + task.ID + `', '2999-01-01T00:00:00.000Z');
		PRAGMA user_version = 23;`)
	if w, err := e.db.Worker(e.ctx, "bob"); err != nil || w.Enabled {
		t.Fatalf("the retired bob's worker after the migration: %+v %v; want it off", w, err)
	}
	if w, err := e.db.Worker(e.ctx, "alice"); err != nil || !w.Enabled {
		t.Fatalf("alice's worker after the migration: %+v %v; want it on", w, err)
	}
	if n := count(t, e.path, "run_tokens", "agent_slug = 'bob'"); n != 0 {
		t.Fatalf("%d run tokens of the retired bob after the migration", n)
	}
	if n := count(t, e.path, "run_tokens", "agent_slug = 'alice'"); n != 1 {
		t.Fatalf("%d run tokens of alice after the migration; want hers kept", n)
	}
}
