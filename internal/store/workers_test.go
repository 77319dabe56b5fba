package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// workerConfig is a valid, enabled worker for slug taking tasks from the operator.
func workerConfig(slug string) relay.WorkerConfig {
	return relay.WorkerConfig{
		AgentSlug:      slug,
		Harness:        "claude-code",
		Command:        "/usr/local/bin/claude",
		Workdir:        "/home/me/project",
		AllowedSenders: []string{"operator"},
		Enabled:        true,
	}
}

func (e *env) saveWorker(c relay.WorkerConfig) relay.WorkerConfig {
	e.t.Helper()
	out, err := e.db.SaveWorker(e.ctx, c)
	if err != nil {
		e.t.Fatalf("SaveWorker(%s): %v", c.AgentSlug, err)
	}
	return out
}

// count returns the number of rows of table matching where (with args),
// read behind the store's back.
func count(t testing.TB, path, table, where string, args ...any) int {
	t.Helper()
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT COUNT(*) FROM `+table+` WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestSaveWorkerNormalizesAndKeepsCreatedAt(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("builder", "alice")
	changes, stop := e.db.Subscribe(16)
	defer stop()

	in := workerConfig(" Builder ")
	in.AllowedSenders = []string{"Operator", "alice", "operator"}
	first := e.saveWorker(in)
	want := relay.WorkerConfig{
		AgentSlug: "builder", Harness: "claude-code", Command: "/usr/local/bin/claude",
		Args: []string{}, PromptMode: relay.PromptStdin, Workdir: "/home/me/project", ExtraDirs: []string{},
		AllowedSenders: []string{"operator", "alice"}, TimeoutMinutes: relay.DefaultWorkerTimeoutMinutes,
		RunsPerHour: relay.DefaultRunsPerHour, Enabled: true, Env: []string{}, AllowPaths: []string{},
		CreatedAt: first.CreatedAt, UpdatedAt: first.UpdatedAt,
	}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("SaveWorker = %+v\nwant       %+v", first, want)
	}
	if first.CreatedAt == "" || first.CreatedAt != first.UpdatedAt {
		t.Fatalf("new worker times: created %q, updated %q", first.CreatedAt, first.UpdatedAt)
	}
	got, err := e.db.Worker(e.ctx, "BUILDER")
	if err != nil || !reflect.DeepEqual(got, first) {
		t.Fatalf("Worker = %+v, %v; want %+v", got, err, first)
	}

	e.clock.Advance(time.Minute)
	in = workerConfig("builder")
	in.Harness = relay.HarnessCustom
	in.Args = []string{"--prompt", "{prompt_file}"}
	in.PromptMode = relay.PromptFile
	in.ExtraDirs = []string{"/srv/shared"}
	in.TimeoutMinutes = 90
	in.RunsPerHour = 5
	in.Exclusive = true
	in.Enabled = false
	in.Env = []string{"GITHUB_TOKEN"}
	in.Sandbox, in.AllowPaths, in.AllowUnsandboxed = relay.SandboxOn, []string{"/srv/data", "/srv/cache:rw"}, true
	in.CreatedAt = "1999-01-01T00:00:00.000Z" // ignored
	second := e.saveWorker(in)
	if second.Sandbox != relay.SandboxOn || !equalStrings(second.AllowPaths, in.AllowPaths) || !second.AllowUnsandboxed {
		t.Fatalf("sandbox settings = %q %q %v", second.Sandbox, second.AllowPaths, second.AllowUnsandboxed)
	}
	bad := in
	bad.AllowPaths = []string{"relative/path"}
	wantCode(t, func() error { _, err := e.db.SaveWorker(e.ctx, bad); return err }(), relay.EInvalidRequest)
	bad.AllowPaths, bad.Sandbox = nil, "maybe"
	wantCode(t, func() error { _, err := e.db.SaveWorker(e.ctx, bad); return err }(), relay.EInvalidRequest)
	// A session binding survives a save; a custom worker cannot have one.
	in.Session = "parser work"
	wantCode(t, func() error { _, err := e.db.SaveWorker(e.ctx, in); return err }(), relay.EInvalidRequest)
	in.Harness, in.SessionID, in.SessionLabel = relay.SessionCodex, "019a0000-0000-7000-8000-000000000001", "parser work"
	bound := e.saveWorker(in)
	if bound.Session != "parser work" || bound.SessionID != in.SessionID || bound.SessionLabel != "parser work" {
		t.Fatalf("bound worker = %+v", bound)
	}
	in.Harness, in.Session = relay.HarnessCustom, ""
	if unbound := e.saveWorker(in); unbound.Session != "" || unbound.SessionID != "" || unbound.SessionLabel != "" {
		t.Fatalf("unbinding kept %q %q %q", unbound.Session, unbound.SessionID, unbound.SessionLabel)
	}
	if second.CreatedAt != first.CreatedAt {
		t.Fatalf("upsert changed created_at %q → %q", first.CreatedAt, second.CreatedAt)
	}
	if second.UpdatedAt <= first.UpdatedAt {
		t.Fatalf("upsert kept updated_at %q (was %q)", second.UpdatedAt, first.UpdatedAt)
	}
	if second.Harness != relay.HarnessCustom || !equalStrings(second.Args, []string{"--prompt", "{prompt_file}"}) ||
		second.PromptMode != relay.PromptFile || !equalStrings(second.ExtraDirs, []string{"/srv/shared"}) ||
		!equalStrings(second.AllowedSenders, []string{"operator"}) || second.TimeoutMinutes != 90 ||
		second.RunsPerHour != 5 || !second.Exclusive || second.Enabled || !equalStrings(second.Env, []string{"GITHUB_TOKEN"}) {
		t.Fatalf("replaced worker = %+v", second)
	}
	if got := drain(changes, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("SaveWorker published %+v; the worker manager publishes status", got)
	}
	if n := count(t, e.path, "workers", "1"); n != 1 {
		t.Fatalf("%d worker rows after an upsert", n)
	}
}

func TestSaveWorkerRefusals(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	cases := []struct {
		name string
		edit func(*relay.WorkerConfig)
		code string
	}{
		{"enabled without senders", func(c *relay.WorkerConfig) { c.AllowedSenders = nil }, relay.EInvalidRequest},
		{"disabled without senders", func(c *relay.WorkerConfig) { c.AllowedSenders = nil; c.Enabled = false }, ""},
		{"bad sender slug", func(c *relay.WorkerConfig) { c.AllowedSenders = []string{"no spaces"} }, relay.EInvalidRequest},
		{"no harness", func(c *relay.WorkerConfig) { c.Harness = " " }, relay.EInvalidRequest},
		{"no workdir", func(c *relay.WorkerConfig) { c.Workdir = "" }, relay.EInvalidRequest},
		{"bad prompt mode", func(c *relay.WorkerConfig) { c.PromptMode = "pipe" }, relay.EInvalidRequest},
		{"timeout too long", func(c *relay.WorkerConfig) { c.TimeoutMinutes = relay.MaxWorkerTimeoutMinutes + 1 }, relay.EInvalidRequest},
		{"runs per hour negative", func(c *relay.WorkerConfig) { c.RunsPerHour = -1 }, relay.EInvalidRequest},
		{"bad env name", func(c *relay.WorkerConfig) { c.Env = []string{"NOT-A-NAME"} }, relay.EInvalidRequest},
		{"bad agent slug", func(c *relay.WorkerConfig) { c.AgentSlug = "!" }, relay.EInvalidRequest},
		{"unknown agent", func(c *relay.WorkerConfig) { c.AgentSlug = "ghost" }, relay.EUnknownAgent},
		{"a person", func(c *relay.WorkerConfig) { c.AgentSlug = "operator" }, relay.EInvalidAgentKind},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := workerConfig("builder")
			tc.edit(&c)
			_, err := e.db.SaveWorker(e.ctx, c)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("SaveWorker: %v", err)
				}
				return
			}
			wantCode(t, err, tc.code)
		})
	}
	if n := count(t, e.path, "workers", "agent_slug <> 'builder'"); n != 0 {
		t.Fatalf("refused saves left %d rows", n)
	}
	if !e.db.Healthy() {
		t.Fatal("a refused save marked the store unhealthy")
	}
}

func TestWorkerLookupListDelete(t *testing.T) {
	e := newEnv(t, store.Options{})
	for _, s := range []string{"zed", "amy", "max"} {
		e.register(s)
	}
	list, err := e.db.ListWorkers(e.ctx)
	if err != nil || list == nil || len(list) != 0 {
		t.Fatalf("ListWorkers on none = %#v, %v", list, err)
	}
	for _, s := range []string{"zed", "amy", "max"} {
		e.saveWorker(workerConfig(s))
	}
	list, err = e.db.ListWorkers(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, w := range list {
		slugs = append(slugs, w.AgentSlug)
	}
	if !equalStrings(slugs, []string{"amy", "max", "zed"}) {
		t.Fatalf("ListWorkers order = %v", slugs)
	}

	if err := e.db.DeleteWorker(e.ctx, "max"); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.Worker(e.ctx, "max")
	wantCode(t, err, relay.EUnknownWorker) // 404 at the edges: web.TestHTTPStatus
	if d := relay.AsError(err).Details; d["slug"] != "max" {
		t.Errorf("unknown_worker details = %v", d)
	}
	if err := e.db.DeleteWorker(e.ctx, "max"); err != nil {
		t.Fatalf("deleting a missing worker: %v", err)
	}
	if err := e.db.DeleteWorker(e.ctx, "nobody-at-all"); err != nil {
		t.Fatalf("deleting the worker of an unknown agent: %v", err)
	}
	if _, err := e.db.Worker(e.ctx, "amy"); err != nil {
		t.Fatalf("other workers went too: %v", err)
	}
}

func TestWorkerOnly(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	if only, err := e.db.WorkerOnly(e.ctx, "builder"); err != nil || only {
		t.Fatalf("WorkerOnly without a worker = %v, %v", only, err)
	}
	if only, err := e.db.WorkerOnly(e.ctx, "ghost"); err != nil || only {
		t.Fatalf("WorkerOnly of an unknown agent = %v, %v", only, err)
	}
	for _, tc := range []struct{ enabled, exclusive, want bool }{
		{false, false, false},
		{true, false, false},
		{false, true, false},
		{true, true, true},
	} {
		c := workerConfig("builder")
		c.Enabled, c.Exclusive = tc.enabled, tc.exclusive
		e.saveWorker(c)
		only, err := e.db.WorkerOnly(e.ctx, "Builder")
		if err != nil || only != tc.want {
			t.Errorf("enabled=%v exclusive=%v: WorkerOnly = %v, %v; want %v", tc.enabled, tc.exclusive, only, err, tc.want)
		}
	}
}

func TestWorkerGoesWithItsAgent(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("builder", "keeper")
	e.saveWorker(workerConfig("builder"))
	e.saveWorker(workerConfig("keeper"))
	if err := e.db.DeleteAgent(e.ctx, "builder"); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Worker(e.ctx, "builder")
	wantCode(t, err, relay.EUnknownWorker)
	if n := count(t, e.path, "workers", "agent_slug = 'builder'"); n != 0 {
		t.Fatalf("worker row outlived its agent")
	}
	if _, err := e.db.Worker(e.ctx, "keeper"); err != nil {
		t.Fatalf("another agent's worker went too: %v", err)
	}
}

// TestPostResolvesTargetSession: with a resolver set, a post's
// targetSession is resolved before the task is queued and the session's id
// is recorded; a refusal posts nothing; an unknown recipient is refused as
// before, without asking the resolver.
func TestPostResolvesTargetSession(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ann", "bob")
	var asked []string
	e.db.SetSessionResolver(func(_ context.Context, _, recipient, ref string) (string, error) {
		asked = append(asked, recipient+"/"+ref)
		if ref == "release prep" {
			return "sess-1", nil
		}
		return "", relay.Errorf(relay.ESessionNotFound, "no session %q", ref)
	})
	post := func(to, ref string) (relay.Task, error) {
		return e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "ann", RecipientSlug: to, Title: "t", Instructions: "i",
			Priority: relay.PriorityNormal, TargetSession: ref})
	}
	for _, tc := range []struct {
		name, to, ref string
		code, target  string
	}{
		{name: "by name", to: "bob", ref: "release prep", target: "sess-1"},
		{name: "no such session", to: "bob", ref: "nothing", code: relay.ESessionNotFound},
		{name: "no target", to: "bob", ref: ""},
		{name: "unknown recipient", to: "nobody", ref: "release prep", code: relay.EUnknownAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, err := post(tc.to, tc.ref)
			if tc.code != "" {
				wantCode(t, err, tc.code)
				return
			}
			if err != nil || task.TargetSession != tc.target || e.task(task.ID).TargetSession != tc.target {
				t.Fatalf("post = %+v, %v; want target %q", task, err, tc.target)
			}
		})
	}
	if want := []string{"bob/release prep", "bob/nothing"}; len(asked) != 2 || asked[0] != want[0] || asked[1] != want[1] {
		t.Errorf("resolver asked %q, want %q", asked, want)
	}
}

// Ensure a worker's pinned paths are kept as saved, for its own paths only
// (a pin of a path it does not have is dropped), and read back.
func TestSaveWorkerKeepsPins(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("builder")
	in := workerConfig("builder")
	in.ExtraDirs = []string{"/home/me/lib"}
	in.AllowPaths = []string{"/home/me/cache:rw"}
	in.Pinned = map[string]string{"/home/me/project": "/data/project", "/home/me/lib": "/home/me/lib",
		"/home/me/cache": "/home/me/cache", "/elsewhere": "/root"}
	e.saveWorker(in)
	got, err := e.db.Worker(e.ctx, "builder")
	want := map[string]string{"/home/me/project": "/data/project", "/home/me/lib": "/home/me/lib", "/home/me/cache": "/home/me/cache"}
	if err != nil || !reflect.DeepEqual(got.Pinned, want) {
		t.Fatalf("pinned %v, %v; want %v", got.Pinned, err, want)
	}
}
