package store_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

func ptr(s string) *string { return &s }

func TestRegisterDetails(t *testing.T) {
	cases := []struct {
		name    string
		details *string
		locked  bool
		want    string
	}{
		{"omitted keeps the role", nil, false, "Reviews code"},
		{"empty clears the role", ptr(""), false, ""},
		{"new role replaces it", ptr("Writes docs"), false, "Writes docs"},
		{"locked role is kept", ptr("Writes docs"), true, "Reviews code"},
		{"locked role is kept when omitted", nil, true, "Reviews code"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			first, err := e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: "rev", DisplayName: "Rev", ModelSlug: "m1", Capabilities: []string{"text-input"}, Details: ptr("Reviews code")})
			if err != nil || first.Details != "Reviews code" || first.OwnerSet.Details {
				t.Fatalf("first = %+v, %v", first, err)
			}
			if tc.locked {
				if _, err := e.db.UpdateProfile(e.ctx, "rev", relay.ProfileUpdate{Details: ptr("Reviews code")}); err != nil {
					t.Fatal(err)
				}
			}
			again, err := e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: "REV", DisplayName: "Rev 2", ModelSlug: "m2", Capabilities: []string{"web-search", "text-input", "web-search"}, Details: tc.details})
			if err != nil {
				t.Fatal(err)
			}
			if again.Details != tc.want || again.ModelSlug != "m2" || again.DisplayName != "Rev 2" || !equalStrings(again.Capabilities, []string{"text-input", "web-search"}) {
				t.Fatalf("re-registered = %+v, want details %q", again, tc.want)
			}
			if again.RegisteredAt != first.RegisteredAt || again.LastSeenAt <= first.LastSeenAt {
				t.Fatalf("registeredAt %s→%s, lastSeenAt %s→%s", first.RegisteredAt, again.RegisteredAt, first.LastSeenAt, again.LastSeenAt)
			}
		})
	}
}

func TestRegisterValidation(t *testing.T) {
	e := newEnv(t, store.Options{})
	for _, in := range []relay.RegisterInput{
		{Slug: "a", DisplayName: "A", ModelSlug: "m", Capabilities: []string{"x"}},
		{Slug: "ok-slug", DisplayName: " ", ModelSlug: "m", Capabilities: []string{"x"}},
		{Slug: "ok-slug", DisplayName: "A", ModelSlug: "m"},
		{Slug: "ok-slug", DisplayName: "A", ModelSlug: "m", Capabilities: []string{"x"}, Details: ptr(strings.Repeat("d", 2001))},
	} {
		_, err := e.db.RegisterAgent(e.ctx, in)
		wantCode(t, err, relay.EInvalidRequest)
	}
}

func TestConcurrentRegistrationsAllPersist(t *testing.T) {
	e := newEnv(t, store.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 25)
	for i := 0; i < 25; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := e.db.RegisterAgent(context.Background(), relay.RegisterInput{Slug: "agent-" + string(rune('a'+i)) + "x", DisplayName: "A", ModelSlug: "m", Capabilities: []string{"x"}})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all, err := e.db.ListAgents(e.ctx, true)
	if err != nil || len(all) != 26 {
		t.Fatalf("%d agents, %v; want 25 and the operator", len(all), err)
	}
}

func TestProfileLocks(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("rev")
	a, err := e.db.UpdateProfile(e.ctx, "rev", relay.ProfileUpdate{DisplayName: ptr(" Reviewer "), Details: ptr("Reviews every PR")})
	if err != nil {
		t.Fatal(err)
	}
	if a.DisplayName != "Reviewer" || a.Details != "Reviews every PR" || !a.OwnerSet.DisplayName || !a.OwnerSet.Details {
		t.Fatalf("updated = %+v", a)
	}
	a, err = e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: "rev", DisplayName: "Self-chosen", ModelSlug: "m9", Capabilities: []string{"x"}, Details: ptr("Something else")})
	if err != nil || a.DisplayName != "Reviewer" || a.Details != "Reviews every PR" || a.ModelSlug != "m9" {
		t.Fatalf("re-registered over locks = %+v, %v", a, err)
	}
	// An empty role clears and unlocks it; the name stays locked.
	a, err = e.db.UpdateProfile(e.ctx, "rev", relay.ProfileUpdate{Details: ptr("")})
	if err != nil || a.Details != "" || a.OwnerSet.Details || !a.OwnerSet.DisplayName {
		t.Fatalf("cleared role = %+v, %v", a, err)
	}
	a, err = e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: "rev", DisplayName: "Self-chosen", ModelSlug: "m9", Capabilities: []string{"x"}, Details: ptr("My own role")})
	if err != nil || a.Details != "My own role" || a.DisplayName != "Reviewer" {
		t.Fatalf("after unlock = %+v, %v", a, err)
	}
	_, err = e.db.UpdateProfile(e.ctx, "rev", relay.ProfileUpdate{})
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.UpdateProfile(e.ctx, "ghost", relay.ProfileUpdate{DisplayName: ptr("x")})
	wantCode(t, err, relay.EUnknownAgent)
}

func TestAvailability(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("old")
	e.clock.Advance(relay.OnlineWindow + time.Second)
	e.register("fresh")
	online, err := e.db.ListAgents(e.ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(online) != 1 || online[0].Slug != "fresh" || online[0].Availability != relay.Online {
		t.Fatalf("online = %+v", online)
	}
	all, err := e.db.ListAgents(e.ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, a := range all {
		slugs = append(slugs, a.Slug+"="+a.Availability)
	}
	if !equalStrings(slugs, []string{"fresh=online", "old=offline", "operator=offline"}) {
		t.Fatalf("all = %v", slugs)
	}
	if _, err := e.db.Heartbeat(e.ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if a, _ := e.db.GetAgent(e.ctx, "old"); a.Availability != relay.Online {
		t.Fatalf("after heartbeat = %+v", a)
	}
	stats, err := e.db.Stats(e.ctx)
	if err != nil || stats.Agents.Total != 3 || stats.Agents.Online != 2 {
		t.Fatalf("stats = %+v, %v", stats, err)
	}
	_, err = e.db.Heartbeat(e.ctx, "ghost")
	wantCode(t, err, relay.EUnknownAgent)
	_, err = e.db.GetAgent(e.ctx, "ghost")
	wantCode(t, err, relay.EUnknownAgent)
}

func TestPresenceChangesAreThrottled(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	changes, stop := e.db.Subscribe(64)
	defer stop()
	count := func() int {
		n := 0
		for _, c := range drain(changes, 30*time.Millisecond) {
			if c.Type == relay.ChangeAgent && c.Agent.Slug == "bob" {
				n++
			}
		}
		return n
	}
	for i := 0; i < 3; i++ {
		if _, err := e.db.Heartbeat(e.ctx, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("%d presence changes right after registering, want 0", n)
	}
	e.clock.Advance(31 * time.Second)
	for i := 0; i < 3; i++ {
		if _, err := e.db.Heartbeat(e.ctx, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d presence changes in 30 s, want 1", n)
	}
	// A real change is always published.
	if _, err := e.db.UpdateProfile(e.ctx, "bob", relay.ProfileUpdate{DisplayName: ptr("Bobby")}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d changes for a profile edit, want 1", n)
	}
}

func TestOperatorActionsLeavePresenceAlone(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	blocked := reach(e, relay.StatusBlocked)
	completed := reach(e, relay.StatusCompleted)
	cancelled := reach(e, relay.StatusQueued) // last: reach claims the oldest queued task
	e.clock.Advance(relay.OnlineWindow + time.Minute)
	before, _ := e.db.GetAgent(e.ctx, "alice")
	op := relay.ByOperator(e.ctx)

	got, err := e.db.CancelTask(op, "alice", cancelled.ID, "Stop")
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Reports[len(got.Reports)-1].Message; m != "Cancelled by alice: Stop (via dashboard)" {
		t.Fatalf("cancel report = %q", m)
	}
	got, err = e.db.RequeueTask(op, "alice", blocked.ID, "Try again")
	if err != nil || got.Reports[len(got.Reports)-1].Message != "Requeued by alice: Try again (via dashboard)" {
		t.Fatalf("requeue = %+v, %v", got.Reports, err)
	}
	got, err = e.db.RequestChanges(op, "alice", completed.ID, "More tests")
	if err != nil || got.Reports[len(got.Reports)-1].Message != "More tests (via dashboard)" {
		t.Fatalf("changes = %+v, %v", got.Reports, err)
	}
	after, _ := e.db.GetAgent(e.ctx, "alice")
	if after.LastSeenAt != before.LastSeenAt || after.Availability != relay.Offline {
		t.Fatalf("operator actions refreshed alice: %s → %s (%s)", before.LastSeenAt, after.LastSeenAt, after.Availability)
	}
	summaries := map[string]bool{}
	for _, ev := range e.updates("bob").Updates {
		summaries[ev.Summary] = true
	}
	for _, want := range []string{
		"alice cancelled “Fix the bug”: Stop (via dashboard)",
		"alice requeued “Fix the bug”: Try again (via dashboard)",
		"alice asked for changes to “Fix the bug”: More tests (via dashboard)",
	} {
		if !summaries[want] {
			t.Errorf("missing event %q in %v", want, summaries)
		}
	}
	// The same actions by the agent itself do refresh presence.
	if _, err := e.db.CancelTask(e.ctx, "alice", blocked.ID, "Stop"); err != nil {
		t.Fatal(err)
	}
	if a, _ := e.db.GetAgent(e.ctx, "alice"); a.Availability != relay.Online {
		t.Fatalf("alice's own action left her %s", a.Availability)
	}
}

func TestAgentTokens(t *testing.T) {
	e := newEnv(t, store.Options{})
	a, token, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "coder", DisplayName: "Coder", ModelSlug: "m", Capabilities: []string{"code-execution"}, Details: "Writes code"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, relay.AgentTokenPrefix) || len(token) != 47 || !a.HasToken || a.Kind != relay.KindAgent || a.OwnerSet.Details {
		t.Fatalf("created %+v with token %q", a, token)
	}
	_, _, err = e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "Coder", DisplayName: "C", ModelSlug: "m", Capabilities: []string{"x"}})
	wantCode(t, err, relay.EAgentExists)
	human, humanToken, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: "pat", DisplayName: "Pat", ModelSlug: "human", Capabilities: []string{"text-input"}, Kind: relay.KindHuman})
	if err != nil || humanToken != "" || human.HasToken || human.Kind != relay.KindHuman {
		t.Fatalf("human = %+v, %q, %v", human, humanToken, err)
	}
	_, err = e.db.IssueToken(e.ctx, "pat")
	wantCode(t, err, relay.EInvalidAgentKind)

	auth := func(tok string) (relay.Principal, error) { return e.db.Authenticate(e.ctx, tok) }
	if p, err := auth(token); err != nil || p != (relay.Principal{Kind: relay.PrincipalAgent, Slug: "coder"}) {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "cca_wrong", token + "x", strings.ToUpper(token)} {
		_, err := auth(bad)
		wantCode(t, err, relay.EUnauthorized)
	}
	rotated, err := e.db.IssueToken(e.ctx, "coder")
	if err != nil || rotated == token {
		t.Fatalf("rotated = %q, %v", rotated, err)
	}
	_, err = auth(token)
	wantCode(t, err, relay.EUnauthorized)
	if p, err := auth(rotated); err != nil || p.Slug != "coder" {
		t.Fatalf("rotated token = %+v, %v", p, err)
	}
	if err := e.db.RevokeToken(e.ctx, "coder"); err != nil {
		t.Fatal(err)
	}
	_, err = auth(rotated)
	wantCode(t, err, relay.EUnauthorized)
	if a, _ := e.db.GetAgent(e.ctx, "coder"); a.HasToken {
		t.Fatal("hasToken after revoke")
	}
	wantCode(t, e.db.RevokeToken(e.ctx, "ghost"), relay.EUnknownAgent)
	_, err = e.db.IssueToken(e.ctx, "ghost")
	wantCode(t, err, relay.EUnknownAgent)

	// Only hashes reach the disk.
	final, err := e.db.IssueToken(e.ctx, "coder")
	if err != nil {
		t.Fatal(err)
	}
	task := e.post("operator", "coder", "Run", 0)
	run, err := e.db.IssueRunToken(e.ctx, "coder", task.ID, 600)
	if err != nil {
		t.Fatal(err)
	}
	_, code, err := e.db.CreateInvite(e.ctx, relay.InviteInput{ExpiresInHours: 1})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{token, rotated, final, run, code}
	hashes := []string{relay.HashToken(final), relay.HashToken(run), relay.HashToken(code)}
	check := func(when string, files ...string) {
		t.Helper()
		var all []byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		for _, s := range secrets {
			if bytes.Contains(all, []byte(s)) {
				t.Fatalf("%s: a raw secret %q is in the database files", when, s[:8])
			}
		}
		for _, h := range hashes {
			if !bytes.Contains(all, []byte(h)) {
				t.Fatalf("%s: hash %s not found; are these the right files?", when, h[:8])
			}
		}
	}
	check("live", e.path, e.path+"-wal")
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed", e.path, e.path+"-wal")
}

func TestRunTokens(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("worker")
	task := e.post("operator", "worker", "Run me", 0)
	other := e.post("operator", "worker", "Other", 0)
	run, err := e.db.IssueRunToken(e.ctx, "worker", task.ID, 600)
	if err != nil || !strings.HasPrefix(run, relay.RunTokenPrefix) {
		t.Fatalf("run token %q, %v", run, err)
	}
	otherRun, err := e.db.IssueRunToken(e.ctx, "worker", other.ID, 6000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.db.Authenticate(e.ctx, run)
	if err != nil || p != (relay.Principal{Kind: relay.PrincipalAgent, Slug: "worker", RunTaskID: task.ID}) {
		t.Fatalf("run principal = %+v, %v", p, err)
	}
	_, err = e.db.IssueRunToken(e.ctx, "operator", task.ID, 600)
	wantCode(t, err, relay.EInvalidAgentKind)
	_, err = e.db.IssueRunToken(e.ctx, "worker", relay.NewID(), 600)
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.IssueRunToken(e.ctx, "ghost", task.ID, 600)
	wantCode(t, err, relay.EUnknownAgent)
	_, err = e.db.IssueRunToken(e.ctx, "worker", task.ID, 0)
	wantCode(t, err, relay.EInvalidRequest)

	// Expiry: a run token stops resolving at its expiry and the sweep deletes it.
	e.clock.Advance(601 * time.Second)
	_, err = e.db.Authenticate(e.ctx, run)
	wantCode(t, err, relay.EUnauthorized)
	if _, err := e.db.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rawDB(t, e.path).QueryRow(`SELECT COUNT(*) FROM run_tokens`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("run tokens after sweep: %d, %v; want only the unexpired one", n, err)
	}
	// Revocation by task.
	if err := e.db.RevokeRunTokens(e.ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.Authenticate(e.ctx, otherRun)
	wantCode(t, err, relay.EUnauthorized)
}

// Ensure a deleted agent's name stays taken for an invitee while its tasks
// are kept: enrolled under it, it would read their instructions and
// results and act as their sender. Once the retention sweep has taken them,
// the name is free. The operator may take the name back (a project's
// folder registered again), and with it the tasks.
func TestDeletedAgentsNameStaysWhileItsTasksDo(t *testing.T) {
	e := newEnv(t, store.Options{RetentionDays: 0.5})
	task := e.sentTask() // alice to bob
	if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	_, code, err := e.db.CreateInvite(e.ctx, relay.InviteInput{Label: "x", ExpiresInHours: 48, MaxUses: 3})
	if err != nil {
		t.Fatal(err)
	}
	create := func(slug string) error {
		_, _, err := e.db.CreateAgent(e.ctx, relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}})
		return err
	}
	enroll := func(slug string) error {
		_, err := e.db.Enroll(e.ctx, enrollInput(code, slug))
		return err
	}
	register := func(slug string) error {
		_, err := e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}})
		return err
	}
	err = enroll("bob")
	wantCode(t, err, relay.EAgentExists)
	if want := "The name “bob” belonged to an agent that was deleted, and its tasks are kept (0.5 days after they finish); choose another name, so that nobody reads them under it."; relay.ErrorMessage(err) != want {
		t.Errorf("enroll bob: %q, want %q", relay.ErrorMessage(err), want)
	}
	if err := enroll("carol"); err != nil {
		t.Fatalf("a name no task holds: %v", err)
	}
	e.clock.Advance(13 * time.Hour)
	if res, err := e.db.Sweep(e.ctx); err != nil || res.Pruned != 1 {
		t.Fatalf("sweep = %+v, %v; want the task pruned", res, err)
	}
	if err := enroll("bob"); err != nil {
		t.Fatalf("bob once its tasks are gone: %v", err)
	}
	// The operator's own: created or registered again under a deleted
	// name, with its tasks.
	for name, take := range map[string]func(string) error{"create": create, "register": register} {
		slug := "d" + name
		if err := take(slug); err != nil {
			t.Fatal(err)
		}
		task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: slug, Title: "t", Instructions: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "x"); err != nil {
			t.Fatal(err)
		}
		if err := e.db.DeleteAgent(e.ctx, slug); err != nil {
			t.Fatal(err)
		}
		if err := take(slug); err != nil {
			t.Fatalf("%s %s again, by the operator: %v", name, slug, err)
		}
	}
}

func TestDeleteAgent(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	run, err := e.db.IssueRunToken(e.ctx, "bob", task.ID, 600)
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"alice", "bob"} {
		err := e.db.DeleteAgent(e.ctx, slug)
		wantCode(t, err, relay.EAgentHasOpenTasks)
		if want := "“" + slug + "” still has 1 open task (on the Tasks page); cancel or finish them first."; relay.ErrorMessage(err) != want {
			t.Errorf("delete %s: %q, want %q", slug, relay.ErrorMessage(err), want)
		}
	}
	if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "done with it"); err != nil {
		t.Fatal(err)
	}
	changes, stop := e.db.Subscribe(8)
	defer stop()
	if err := e.db.DeleteAgent(e.ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	got := drain(changes, 30*time.Millisecond)
	if len(got) != 1 || got[0].Type != relay.ChangeAgentRemoved || got[0].Slug != "bob" {
		t.Fatalf("changes = %+v", got)
	}
	wantCode(t, e.db.DeleteAgent(e.ctx, "bob"), relay.EUnknownAgent)
	_, err = e.db.Authenticate(e.ctx, run)
	wantCode(t, err, relay.EUnauthorized)
	// Finished tasks and events stay.
	if got := e.task(task.ID); got.Status != relay.StatusCancelled {
		t.Fatalf("task after delete = %+v", got)
	}
	if evs, _ := e.db.ListEvents(e.ctx, relay.EventFilter{Agent: "bob"}); len(evs) != 1 {
		t.Fatalf("bob's events after delete = %+v", evs)
	}
}
