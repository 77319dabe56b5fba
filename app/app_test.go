package app_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// startRelay runs a real relay (SQLite file, HTTP on a random loopback port)
// in a temp dir and stops it when the test ends; opts change its config.
func startRelay(t *testing.T, opts ...func(*config.Config)) *app.Relay {
	t.Helper()
	return apptest.Relay(t, opts...)
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := relay.ErrorCode(err); got != code {
		t.Fatalf("error code %q, want %q (%v)", got, code, err)
	}
}

// Ensure services bound before the relay starts answer with an error, not a panic.
func TestServicesBeforeStart(t *testing.T) {
	s := app.NewServices("test")
	if _, err := s.Tasks.List(relay.TaskFilter{}); err == nil {
		t.Fatal("want an error before start")
	}
	if len(s.List()) != len(s.Bound()) {
		t.Fatal("List and Bound disagree")
	}
}

// Ensure the agents service creates, edits, rotates, revokes and deletes.
func TestAgents(t *testing.T) {
	r := startRelay(t)
	s, svc, ctx := r.Services, r.Service(), context.Background()

	rev, err := s.Agents.Create(relay.CreateAgentInput{Slug: "Builder", DisplayName: "Builder", ModelSlug: "m", Capabilities: []string{"code-execution"}})
	noErr(t, err)
	if rev.Agent.Slug != "builder" || !strings.HasPrefix(rev.Token, "cca_") || !strings.Contains(rev.Setup.ClaudeCode, rev.Token) || !strings.Contains(rev.Instructions, "builder") {
		t.Fatalf("reveal %+v", rev)
	}
	if !strings.HasSuffix(rev.MCPURL, "/mcp") || !strings.Contains(rev.MCPURL, strconv.Itoa(r.Config().Port)) {
		t.Fatalf("mcp url %q", rev.MCPURL)
	}
	p, err := svc.Authenticate(ctx, rev.Token)
	noErr(t, err)
	if p.Slug != "builder" {
		t.Fatalf("principal %+v", p)
	}
	_, err = s.Agents.Create(relay.CreateAgentInput{Slug: "builder", DisplayName: "B", ModelSlug: "m", Capabilities: []string{"x"}})
	wantCode(t, err, relay.EAgentExists)

	name, role := "Bob the builder", "Builds things"
	a, err := s.Agents.Update("builder", relay.ProfileUpdate{DisplayName: &name, Details: &role})
	noErr(t, err)
	if a.DisplayName != name || !a.OwnerSet.DisplayName || !a.OwnerSet.Details {
		t.Fatalf("update %+v", a)
	}
	rot, err := s.Agents.RotateToken("builder")
	noErr(t, err)
	if _, err := svc.Authenticate(ctx, rev.Token); relay.ErrorCode(err) != relay.EUnauthorized {
		t.Fatalf("old token still works: %v", err)
	}
	a, err = s.Agents.RevokeToken("builder")
	noErr(t, err)
	if a.HasToken {
		t.Fatal("token not revoked")
	}
	if _, err := svc.Authenticate(ctx, rot.Token); relay.ErrorCode(err) != relay.EUnauthorized {
		t.Fatalf("revoked token works: %v", err)
	}
	_, err = s.Agents.RotateToken("operator")
	wantCode(t, err, relay.EInvalidAgentKind)
	wantCode(t, s.Agents.Delete("operator"), relay.EOperatorProtected)
	if err := s.Agents.Delete("builder"); err != nil {
		t.Fatal(err)
	}
	agents, err := s.Agents.List()
	noErr(t, err)
	if len(agents) != 1 || agents[0].Slug != "operator" {
		t.Fatalf("agents %+v", agents)
	}
}

// Ensure the tasks service posts as the operator and acts on the sender's behalf.
func TestTasks(t *testing.T) {
	r := startRelay(t)
	s, svc, ctx := r.Services, r.Service(), context.Background()
	if _, err := s.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}}); err != nil {
		t.Fatal(err)
	}

	task, err := s.Tasks.Post(app.NewTask{RecipientSlug: "bob", Title: "Write a poem", Instructions: "About relays.", Priority: 3})
	noErr(t, err)
	if task.SenderSlug != "operator" || task.Status != relay.StatusQueued || task.Priority != 3 {
		t.Fatalf("posted %+v", task)
	}
	_, err = s.Tasks.Post(app.NewTask{RecipientSlug: "bob", Title: "", Instructions: "x"})
	wantCode(t, err, relay.EInvalidRequest)

	claimed, err := svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaChat})
	noErr(t, err)
	if claimed == nil || claimed.ID != task.ID {
		t.Fatalf("claimed %+v", claimed)
	}
	if _, err := svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "Done", Result: "A poem"}); err != nil {
		t.Fatal(err)
	}

	again, err := s.Tasks.RequestChanges(task.ID, "Make it rhyme")
	noErr(t, err)
	if again.Status != relay.StatusQueued {
		t.Fatalf("after request changes: %s", again.Status)
	}
	last := again.Reports[len(again.Reports)-1]
	if last.Kind != relay.ReportChanges || !strings.Contains(last.Message, "Make it rhyme") || !strings.Contains(last.Message, "via dashboard") {
		t.Fatalf("changes report %+v", last)
	}
	_, err = s.Tasks.Requeue(task.ID, "again")
	wantCode(t, err, relay.EInvalidTaskState)

	child, err := svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "operator", Title: "Question", Instructions: "Which rhyme?", ParentTaskID: task.ID})
	noErr(t, err)
	d, err := s.Tasks.Get(task.ID)
	noErr(t, err)
	if len(d.Related.Children) != 1 || d.Related.Children[0].ID != child.ID || d.Task.ID != task.ID {
		t.Fatalf("detail %+v", d.Related)
	}
	cd, err := s.Tasks.Get(child.ID)
	noErr(t, err)
	if cd.Related.Parent == nil || cd.Related.Parent.ID != task.ID {
		t.Fatalf("child detail %+v", cd.Related)
	}
	_, err = s.Tasks.Get("not-a-uuid")
	wantCode(t, err, relay.EInvalidRequest)
	_, err = s.Tasks.Get(relay.NewID())
	wantCode(t, err, relay.EUnknownTask)

	cancelled, err := s.Tasks.Cancel(task.ID, "No longer needed")
	noErr(t, err)
	if cancelled.Status != relay.StatusCancelled {
		t.Fatalf("cancel: %s", cancelled.Status)
	}
	list, err := s.Tasks.List(relay.TaskFilter{Statuses: []relay.TaskStatus{relay.StatusCancelled}})
	noErr(t, err)
	if len(list) != 1 || list[0].ID != task.ID {
		t.Fatalf("list %+v", list)
	}
	stats, err := s.Overview.Stats()
	noErr(t, err)
	if stats.Tasks.Cancelled != 1 || stats.Tasks.Queued != 1 || stats.Agents.Total != 2 {
		t.Fatalf("stats %+v", stats)
	}
	events, err := s.Events.List(relay.EventFilter{Agent: "operator"})
	noErr(t, err)
	if len(events) == 0 || events[0].Type != relay.EventTaskCompleted && events[0].Type != relay.EventTaskClaimed {
		types := []string{}
		for _, e := range events {
			types = append(types, e.Type)
		}
		t.Fatalf("operator events %v", types)
	}
}

// Ensure invites come with the message to paste, and settings are validated.
func TestInvitesAndSettings(t *testing.T) {
	r := startRelay(t)
	s := r.Services
	created, err := s.Invites.Create(relay.InviteInput{ExpiresInHours: 1, MaxUses: 2, DisplayName: "Ada"})
	noErr(t, err)
	if !strings.HasPrefix(created.Code, "cci_") || !strings.Contains(created.Message, created.Code) || !strings.Contains(created.Message, r.Config().BaseURL()+"/api/enroll") {
		t.Fatalf("invite %+v", created)
	}
	_, err = s.Invites.Create(relay.InviteInput{ExpiresInHours: 0})
	wantCode(t, err, relay.EInvalidRequest)
	inv, err := s.Invites.Revoke(created.Invite.ID)
	noErr(t, err)
	if !inv.Revoked || inv.Active {
		t.Fatalf("revoked %+v", inv)
	}
	l, err := s.Invites.List()
	noErr(t, err)
	if len(l) != 1 {
		t.Fatalf("list %d", len(l))
	}
	info, err := s.Overview.Info()
	noErr(t, err)
	if info.Version != "test" || info.OperatorSlug != "operator" || info.DataDir != r.Config().DataDir {
		t.Fatalf("info %+v", info)
	}
	set, err := s.Settings.Get()
	noErr(t, err)
	if set.MaxChainDepth != relay.DefaultChainLimit {
		t.Fatalf("settings %+v", set)
	}
	_, err = s.Settings.Update(relay.Settings{MaxChainDepth: 11})
	wantCode(t, err, relay.EInvalidRequest)
	set, err = s.Settings.Update(relay.Settings{MaxChainDepth: 0, WorkersPaused: true})
	noErr(t, err)
	if set.MaxChainDepth != 0 || !set.WorkersPaused {
		t.Fatalf("updated %+v", set)
	}
}

// Ensure the bridge serves the same bound methods to HTTP clients with the admin token.
func TestBridgeServesBoundMethods(t *testing.T) {
	r := startRelay(t)
	token, err := r.Config().AdminToken(false)
	noErr(t, err)
	cl := client.New(r.Config().BaseURL(), token)
	var rev app.TokenReveal
	if err := cl.Call(context.Background(), "Agents", "Create", &rev, relay.CreateAgentInput{Slug: "viahttp", DisplayName: "V", ModelSlug: "m", Capabilities: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	direct, err := r.Services.Agents.List()
	noErr(t, err)
	var viaBridge []relay.Agent
	if err := cl.Call(context.Background(), "Agents", "List", &viaBridge); err != nil {
		t.Fatal(err)
	}
	if len(direct) != 2 || len(viaBridge) != 2 || viaBridge[1].Slug != "viahttp" {
		t.Fatalf("direct %d, bridge %+v", len(direct), viaBridge)
	}
	// An agent token is not an admin credential on the bridge. (The client
	// would not even send it: the relay cannot prove it holds it.)
	err = client.New(r.Config().BaseURL(), rev.Token).Call(context.Background(), "Agents", "List", nil)
	if !errors.Is(err, client.ErrNotOurRelay) {
		t.Fatalf("client with an agent token: %v", err)
	}
	req, err := http.NewRequest(http.MethodPost, r.Config().BaseURL()+"/bridge/Agents.List", strings.NewReader("[]"))
	noErr(t, err)
	req.Header.Set("Authorization", "Bearer "+rev.Token)
	resp, err := http.DefaultClient.Do(req)
	noErr(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("agent token on the bridge: %d", resp.StatusCode)
	}
}

// run runs a CLI verb in this process (apptest.Command).
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return apptest.Command(args...)
}
