package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

func enrollInput(code, slug string) relay.EnrollInput {
	return relay.EnrollInput{Invite: code, Slug: slug, DisplayName: "Self " + slug, ModelSlug: "model-y", Capabilities: []string{"text-input"}, Details: "My own role"}
}

func (e *env) invite(id string) relay.Invite {
	e.t.Helper()
	all, err := e.db.ListInvites(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, inv := range all {
		if inv.ID == id {
			return inv
		}
	}
	e.t.Fatalf("invite %s not listed", id)
	return relay.Invite{}
}

func TestInviteUsesAndEnrollment(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("taken")
	inv, code, err := e.db.CreateInvite(e.ctx, relay.InviteInput{Label: " laptops ", ExpiresInHours: 24, MaxUses: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(code, relay.InviteCodePrefix) || len(code) != 36 {
		t.Fatalf("code = %q", code)
	}
	if inv.Label != "laptops" || inv.MaxUses != 2 || inv.Uses != 0 || inv.Revoked || !inv.Active || inv.Agents == nil || len(inv.Agents) != 0 || inv.FirstTask != nil {
		t.Fatalf("new invite = %+v", inv)
	}

	en, err := e.db.Enroll(e.ctx, enrollInput(" "+code+" ", "First-One"))
	if err != nil {
		t.Fatal(err)
	}
	if en.Agent.Slug != "first-one" || en.Agent.DisplayName != "Self First-One" || en.Agent.Details != "My own role" ||
		en.Agent.OwnerSet.DisplayName || en.Agent.OwnerSet.Details || !en.Agent.HasToken || en.AssignedTask != nil {
		t.Fatalf("enrollment = %+v", en)
	}
	if p, err := e.db.Authenticate(e.ctx, en.Token); err != nil || p.Slug != "first-one" {
		t.Fatalf("enrolled token = %+v, %v", p, err)
	}
	if got := e.invite(inv.ID); got.Uses != 1 || !got.Active || !equalStrings(got.Agents, []string{"first-one"}) {
		t.Fatalf("after one use = %+v", got)
	}

	// A taken slug is refused without consuming a use.
	for _, slug := range []string{"taken", "first-one"} {
		_, err = e.db.Enroll(e.ctx, enrollInput(code, slug))
		wantCode(t, err, relay.EAgentExists)
		if re := err.(*relay.Error); re.Details["slug"] != slug {
			t.Fatalf("details = %+v", re.Details)
		}
	}
	if got := e.invite(inv.ID); got.Uses != 1 {
		t.Fatalf("a refused enrollment consumed a use: %+v", got)
	}

	if _, err := e.db.Enroll(e.ctx, enrollInput(code, "second")); err != nil {
		t.Fatal(err)
	}
	got := e.invite(inv.ID)
	if got.Uses != 2 || got.Active || !equalStrings(got.Agents, []string{"first-one", "second"}) {
		t.Fatalf("used up = %+v", got)
	}
	_, err = e.db.Enroll(e.ctx, enrollInput(code, "third"))
	wantCode(t, err, relay.EInvalidInvite)
	if msg := relay.ErrorMessage(err); !strings.Contains(msg, "already been used") || !strings.Contains(msg, "Ask the relay owner for a new invite") {
		t.Fatalf("used-up message = %q", msg)
	}
	if _, err := e.db.GetAgent(e.ctx, "third"); relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Fatalf("a refused enrollment created the agent: %v", err)
	}

	_, err = e.db.Enroll(e.ctx, enrollInput("cci_wrong", "fourth"))
	wantCode(t, err, relay.EInvalidInvite)
	if msg := relay.ErrorMessage(err); !strings.Contains(msg, "not valid") {
		t.Fatalf("wrong-code message = %q", msg)
	}
	_, err = e.db.Enroll(e.ctx, relay.EnrollInput{Invite: code, Slug: "fifth", DisplayName: "F", ModelSlug: "m"})
	wantCode(t, err, relay.EInvalidRequest)
}

func TestInviteExpiryAndRevocation(t *testing.T) {
	e := newEnv(t, store.Options{})
	expiring, expCode, err := e.db.CreateInvite(e.ctx, relay.InviteInput{ExpiresInHours: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	revoked, revCode, err := e.db.CreateInvite(e.ctx, relay.InviteInput{ExpiresInHours: 24})
	if err != nil {
		t.Fatal(err)
	}
	if expiring.MaxUses != 0 {
		t.Fatalf("unlimited invite maxUses = %d", expiring.MaxUses)
	}
	// Unlimited: many agents may enroll before it expires.
	for _, s := range []string{"u1", "u2", "u3"} {
		if _, err := e.db.Enroll(e.ctx, enrollInput(expCode, s)); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(31 * time.Minute)
	_, err = e.db.Enroll(e.ctx, enrollInput(expCode, "late"))
	wantCode(t, err, relay.EInvalidInvite)
	if msg := relay.ErrorMessage(err); !strings.Contains(msg, "expired") {
		t.Fatalf("expired message = %q", msg)
	}
	if got := e.invite(expiring.ID); got.Active || got.Uses != 3 {
		t.Fatalf("expired invite = %+v", got)
	}

	changes, stop := e.db.Subscribe(8)
	r, err := e.db.RevokeInvite(e.ctx, revoked.ID)
	if err != nil || !r.Revoked || r.Active {
		t.Fatalf("revoked = %+v, %v", r, err)
	}
	if got := drain(changes, 30*time.Millisecond); len(got) != 1 || got[0].Type != relay.ChangeInvite || !got[0].Invite.Revoked {
		t.Fatalf("revoke changes = %+v", got)
	}
	stop()
	if _, err := e.db.RevokeInvite(e.ctx, revoked.ID); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	_, err = e.db.Enroll(e.ctx, enrollInput(revCode, "late"))
	wantCode(t, err, relay.EInvalidInvite)
	if msg := relay.ErrorMessage(err); !strings.Contains(msg, "revoked") {
		t.Fatalf("revoked message = %q", msg)
	}
	_, err = e.db.RevokeInvite(e.ctx, relay.NewID())
	wantCode(t, err, relay.EUnknownInvite)
	_, err = e.db.RevokeInvite(e.ctx, "nope")
	wantCode(t, err, relay.EUnknownInvite)

	all, err := e.db.ListInvites(e.ctx)
	if err != nil || len(all) != 2 || all[0].ID != revoked.ID || all[1].ID != expiring.ID {
		t.Fatalf("invites newest first = %+v, %v", all, err)
	}
	for _, bad := range []relay.InviteInput{{ExpiresInHours: 0}, {ExpiresInHours: 721}, {ExpiresInHours: 1, MaxUses: 1001}} {
		_, _, err := e.db.CreateInvite(e.ctx, bad)
		wantCode(t, err, relay.EInvalidRequest)
	}
}

func TestInviteNameRoleAndFirstTask(t *testing.T) {
	e := newEnv(t, store.Options{})
	inv, code, err := e.db.CreateInvite(e.ctx, relay.InviteInput{
		ExpiresInHours: 24, DisplayName: "Design Bot", Role: "Draws diagrams",
		FirstTask: &relay.FirstTask{Title: "Say hello", Instructions: "Introduce yourself", Priority: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if inv.DisplayName != "Design Bot" || inv.Role != "Draws diagrams" || inv.FirstTask == nil || inv.FirstTask.Priority != 3 {
		t.Fatalf("invite = %+v", inv)
	}
	var tasks []string
	for _, slug := range []string{"d1", "d2"} {
		en, err := e.db.Enroll(e.ctx, enrollInput(code, slug))
		if err != nil {
			t.Fatal(err)
		}
		a := en.Agent
		if a.DisplayName != "Design Bot" || a.Details != "Draws diagrams" || !a.OwnerSet.DisplayName || !a.OwnerSet.Details {
			t.Fatalf("enrolled agent = %+v", a)
		}
		if en.AssignedTask == nil || en.AssignedTask.Title != "Say hello" || en.AssignedTask.Priority != 3 {
			t.Fatalf("assigned task = %+v", en.AssignedTask)
		}
		task := e.mustClaim(slug)
		if task.ID != en.AssignedTask.ID || task.SenderSlug != "operator" || task.RecipientSlug != slug || task.Priority != 3 ||
			task.Depth != 0 || len(task.RequiredCapabilities) != 0 || task.Instructions != "Introduce yourself" {
			t.Fatalf("first task = %+v", task)
		}
		tasks = append(tasks, task.ID)

		// Re-registering keeps the owner's name and role and updates the rest.
		again, err := e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: slug, DisplayName: "Mine", ModelSlug: "model-z", Capabilities: []string{"image-output"}, Details: ptr("Mine")})
		if err != nil || again.DisplayName != "Design Bot" || again.Details != "Draws diagrams" || again.ModelSlug != "model-z" {
			t.Fatalf("re-registered = %+v, %v", again, err)
		}
	}
	if tasks[0] == tasks[1] {
		t.Fatal("both agents got the same first task")
	}
	if got := e.invite(inv.ID); got.Uses != 2 || !equalStrings(got.Agents, []string{"d1", "d2"}) {
		t.Fatalf("invite after two enrollments = %+v", got)
	}
}

func TestSettings(t *testing.T) {
	e := newEnv(t, store.Options{})
	s, err := e.db.Settings(e.ctx)
	if err != nil || s != (relay.Settings{MaxChainDepth: relay.DefaultChainLimit, MaxOpenTasksPerSender: relay.DefaultMaxOpenTasksPerSender}) {
		t.Fatalf("default settings = %+v, %v", s, err)
	}
	changes, stop := e.db.Subscribe(8)
	defer stop()
	s, err = e.db.UpdateSettings(e.ctx, relay.Settings{MaxChainDepth: 0, WorkersPaused: true})
	if err != nil || s != (relay.Settings{MaxChainDepth: 0, WorkersPaused: true, MaxOpenTasksPerSender: relay.DefaultMaxOpenTasksPerSender}) {
		t.Fatalf("updated = %+v, %v", s, err)
	}
	if got := drain(changes, 30*time.Millisecond); len(got) != 1 || got[0].Type != relay.ChangeSettings || *got[0].Settings != s {
		t.Fatalf("settings changes = %+v", got)
	}
	if s, _ := e.db.Settings(e.ctx); s.MaxChainDepth != 0 || !s.WorkersPaused {
		t.Fatalf("read back = %+v", s)
	}
	for _, bad := range []int{-1, relay.MaxChainLimit + 1} {
		_, err := e.db.UpdateSettings(e.ctx, relay.Settings{MaxChainDepth: bad})
		wantCode(t, err, relay.EInvalidRequest)
	}
	if got := drain(changes, 30*time.Millisecond); len(got) != 0 {
		t.Fatalf("refused settings published %+v", got)
	}
	// A limit of 0 refuses any enforced hand-off.
	e.register("aa")
	root := e.post("aa", "aa", "root", 0)
	_, err = e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "aa", RecipientSlug: "aa", Title: "t", Instructions: "i", ParentTaskID: root.ID, TargetSession: "s1", FromAgent: true})
	wantCode(t, err, relay.EChainLimit)
}

func TestRetentionPruning(t *testing.T) {
	e := newEnv(t, store.Options{RetentionDays: 0.5})
	e.agents("alice", "bob")
	done := reach(e, relay.StatusCompleted)
	child, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "follow-up", Instructions: "i", ParentTaskID: done.ID})
	if err != nil {
		t.Fatal(err)
	}
	cancelled := reach(e, relay.StatusCancelled)
	open := reach(e, relay.StatusBlocked)
	e.clock.Advance(11 * time.Hour)
	recent := reach(e, relay.StatusCompleted)
	if res, err := e.db.Sweep(e.ctx); err != nil || res.Pruned != 0 {
		t.Fatalf("sweep inside retention = %+v, %v", res, err)
	}
	e.clock.Advance(2 * time.Hour)
	changes, stop := e.db.Subscribe(8)
	defer stop()
	res, err := e.db.Sweep(e.ctx)
	if err != nil || res.Pruned != 2 {
		t.Fatalf("sweep = %+v, %v; want 2 pruned", res, err)
	}
	var removed []string
	for _, c := range drain(changes, 30*time.Millisecond) {
		if c.Type == relay.ChangeTasksRemoved {
			removed = append(removed, c.IDs...)
		}
	}
	if len(removed) != 2 || !(removed[0] == done.ID || removed[1] == done.ID) || !(removed[0] == cancelled.ID || removed[1] == cancelled.ID) {
		t.Fatalf("tasks-removed = %v", removed)
	}
	for _, id := range []string{done.ID, cancelled.ID} {
		_, err := e.db.Task(e.ctx, id)
		wantCode(t, err, relay.EUnknownTask)
	}
	for _, id := range []string{open.ID, recent.ID} {
		e.task(id)
	}
	if got := e.task(child.ID); got.ParentTaskID != "" || got.Depth != 1 {
		t.Fatalf("child of a pruned task = %+v", got)
	}
	var reports int
	if err := rawDB(t, e.path).QueryRow(`SELECT COUNT(*) FROM reports WHERE task_id IN (?, ?)`, done.ID, cancelled.ID).Scan(&reports); err != nil || reports != 0 {
		t.Fatalf("reports of pruned tasks: %d, %v", reports, err)
	}
	if evs, _ := e.db.ListEvents(e.ctx, relay.EventFilter{Limit: 500}); len(evs) == 0 {
		t.Fatal("pruning deleted the journal")
	}
}

func TestStatsDoneToday(t *testing.T) {
	c := newClock()
	c.t = time.Date(2026, 3, 14, 23, 0, 0, 0, time.UTC)
	e := newEnv(t, store.Options{Now: c.Now})
	e.clock = c
	e.agents("alice", "bob")
	reach(e, relay.StatusCompleted)
	reach(e, relay.StatusBlocked)
	e.post("alice", "bob", "queued", 0)
	s, err := e.db.Stats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tasks != (relay.TaskCounts{Queued: 1, Blocked: 1, Completed: 1}) || s.DoneToday != 1 || s.Agents.Total != 3 || s.Agents.Online != 3 {
		t.Fatalf("stats = %+v", s)
	}
	c.Advance(2 * time.Hour) // past midnight UTC
	if s, _ := e.db.Stats(e.ctx); s.DoneToday != 0 || s.Tasks.Completed != 1 {
		t.Fatalf("stats the next day = %+v", s)
	}
}
