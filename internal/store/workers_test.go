package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
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

func TestAppendActivity(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Build", 0)
	other := e.post("operator", "builder", "Other", 0)
	changes, stop := e.db.Subscribe(16)
	defer stop()

	if got, err := e.db.Activity(e.ctx, task.ID); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Activity before any = %#v, %v", got, err)
	}
	files := []relay.ChangedFile{{Path: "/w/a.go", Change: relay.FileAdded, Size: 12}, {Path: "/w/b.go", Change: relay.FileDeleted}}
	first, err := e.db.AppendActivity(e.ctx, task.ID, []relay.ActivityEntry{
		{Seq: 99, Kind: relay.StepStart, Text: "Started"},
		{At: "2026-01-01T00:00:00.000Z", Kind: relay.StepCommand, Text: "go test", Detail: "ok", Status: relay.StepRunning, Ref: "c1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].Seq != 1 || first[1].Seq != 2 || first[0].At == "" ||
		first[1].At != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("first append = %+v", first)
	}
	if _, err := relay.ParseTime(first[0].At); err != nil {
		t.Fatalf("stamped At %q: %v", first[0].At, err)
	}
	second, err := e.db.AppendActivity(e.ctx, strUpper(task.ID), []relay.ActivityEntry{
		{Kind: relay.StepCommand, Text: "go test", Status: relay.StepOK, Ref: "c1"},
		{Kind: relay.StepFiles, Text: "2 files", Files: files},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second[0].Seq != 3 || second[1].Seq != 4 {
		t.Fatalf("second append numbered %d, %d", second[0].Seq, second[1].Seq)
	}
	if o, err := e.db.AppendActivity(e.ctx, other.ID, []relay.ActivityEntry{{Kind: relay.StepStart, Text: "Go"}}); err != nil || o[0].Seq != 1 {
		t.Fatalf("another task's numbering = %+v, %v", o, err)
	}

	got, err := e.db.Activity(e.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]relay.ActivityEntry{}, first...), second...); !reflect.DeepEqual(got, want) {
		t.Fatalf("Activity = %+v\nwant       %+v", got, want)
	}

	published := drain(changes, 50*time.Millisecond)
	if len(published) != 3 {
		t.Fatalf("published %d changes, want one per append: %+v", len(published), published)
	}
	for i, want := range [][]relay.ActivityEntry{first, second} {
		c := published[i]
		if c.Type != relay.ChangeActivity || c.TaskID != task.ID || !reflect.DeepEqual(c.Entries, want) {
			t.Fatalf("change %d = %+v, want entries %+v", i, c, want)
		}
	}

	_, err = e.db.AppendActivity(e.ctx, relay.NewID(), []relay.ActivityEntry{{Kind: relay.StepStart, Text: "x"}})
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.Activity(e.ctx, relay.NewID())
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.AppendActivity(e.ctx, "not-a-task", []relay.ActivityEntry{{Kind: relay.StepStart, Text: "x"}})
	wantCode(t, err, relay.EInvalidRequest)
	if got := drain(changes, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("refused appends published %+v", got)
	}
	if !e.db.Healthy() {
		t.Fatal("a refused append marked the store unhealthy")
	}
}

func strUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestAppendActivityConcurrent(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Busy", 0)
	const writers, appends = 2, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends)
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				// Batches of 1 and 2 entries, so numbering spans batches.
				batch := []relay.ActivityEntry{{Kind: relay.StepMessage, Text: fmt.Sprintf("w%d-%d-a", w, i)}}
				if i%2 == 1 {
					batch = append(batch, relay.ActivityEntry{Kind: relay.StepMessage, Text: fmt.Sprintf("w%d-%d-b", w, i)})
				}
				got, err := e.db.AppendActivity(e.ctx, task.ID, batch)
				if err != nil {
					errs <- err
					return
				}
				for j := 1; j < len(got); j++ {
					if got[j].Seq != got[j-1].Seq+1 {
						errs <- fmt.Errorf("one batch numbered %d then %d", got[j-1].Seq, got[j].Seq)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := e.db.Activity(e.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	total := writers * (appends + appends/2)
	if len(got) != total {
		t.Fatalf("%d entries, want %d", len(got), total)
	}
	texts := map[string]bool{}
	for i, a := range got {
		if a.Seq != i+1 {
			t.Fatalf("entry %d has seq %d: not contiguous from 1", i, a.Seq)
		}
		if texts[a.Text] {
			t.Fatalf("entry %q stored twice", a.Text)
		}
		texts[a.Text] = true
	}
}

func TestTaskChangedFile(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Edit", 0)
	other := e.post("operator", "builder", "Other", 0)
	if _, err := e.db.AppendActivity(e.ctx, task.ID, []relay.ActivityEntry{
		{Kind: relay.StepFile, Text: "Edit /w/notes.md"},
		{Kind: relay.StepFiles, Text: "2 files", Files: []relay.ChangedFile{
			{Path: "/w/src/main.go", Change: relay.FileChanged, Size: 10},
			{Path: "/w/it's \"quoted\".txt", Change: relay.FileAdded},
		}},
		{Kind: relay.StepFiles, Text: "1 file", Files: []relay.ChangedFile{{Path: "/w/gone.txt", Change: relay.FileDeleted}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AppendActivity(e.ctx, other.ID, []relay.ActivityEntry{
		{Kind: relay.StepFiles, Text: "1 file", Files: []relay.ChangedFile{{Path: "/w/other.go", Change: relay.FileAdded}}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task, path string
		want       bool
	}{
		{task.ID, "/w/src/main.go", true},
		{task.ID, "/w/it's \"quoted\".txt", true},
		{task.ID, "/w/gone.txt", true},
		{strUpper(task.ID), "/w/src/main.go", true},
		{task.ID, "/w/src", false},
		{task.ID, "/w/src/main.go/", false},
		{task.ID, "/W/SRC/MAIN.GO", false},
		{task.ID, "/w/notes.md", false}, // in a step's text, not its files
		{task.ID, "", false},
		{task.ID, "/w/other.go", false}, // another task's file
		{other.ID, "/w/other.go", true},
		{relay.NewID(), "/w/src/main.go", false},
	} {
		got, err := e.db.TaskChangedFile(e.ctx, tc.task, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("TaskChangedFile(%s, %q) = %v, %v; want %v", tc.task, tc.path, got, err, tc.want)
		}
	}
}

func TestRunSessions(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Resume me", 0)
	if s, ok, err := e.db.RunSession(e.ctx, task.ID); err != nil || ok || s != (relay.RunSession{}) {
		t.Fatalf("RunSession before any = %+v, %v, %v", s, ok, err)
	}
	first := relay.RunSession{TaskID: task.ID, Harness: "claude-code", SessionID: "s-1", Workdir: "/w"}
	if err := e.db.SaveRunSession(e.ctx, first); err != nil {
		t.Fatal(err)
	}
	if s, ok, err := e.db.RunSession(e.ctx, strUpper(task.ID)); err != nil || !ok || s != first {
		t.Fatalf("RunSession = %+v, %v, %v; want %+v", s, ok, err, first)
	}
	second := relay.RunSession{TaskID: strUpper(task.ID), Harness: "codex", SessionID: "s-2", Workdir: "/w2"}
	if err := e.db.SaveRunSession(e.ctx, second); err != nil {
		t.Fatal(err)
	}
	second.TaskID = task.ID
	if s, ok, err := e.db.RunSession(e.ctx, task.ID); err != nil || !ok || s != second {
		t.Fatalf("replaced RunSession = %+v, %v, %v; want %+v", s, ok, err, second)
	}
	if n := count(t, e.path, "run_sessions", "1"); n != 1 {
		t.Fatalf("%d session rows after an upsert", n)
	}
	err := e.db.SaveRunSession(e.ctx, relay.RunSession{TaskID: relay.NewID(), Harness: "codex", SessionID: "x"})
	wantCode(t, err, relay.EUnknownTask)
	if !e.db.Healthy() {
		t.Fatal("a refused session marked the store unhealthy")
	}
}

func TestPruneTakesActivityAndSessions(t *testing.T) {
	e := newEnv(t, store.Options{RetentionDays: 1})
	e.register("builder")
	done := e.post("operator", "builder", "Done long ago", 0)
	kept := e.post("operator", "builder", "Still open", 0)
	e.mustClaim("builder")
	e.report("builder", done.ID, relay.ReportCompleted, "Done.")
	for _, id := range []string{done.ID, kept.ID} {
		if _, err := e.db.AppendActivity(e.ctx, id, []relay.ActivityEntry{
			{Kind: relay.StepStart, Text: "Go"},
			{Kind: relay.StepFiles, Text: "1 file", Files: []relay.ChangedFile{{Path: "/w/x", Change: relay.FileAdded}}},
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.db.SaveRunSession(e.ctx, relay.RunSession{TaskID: id, Harness: "codex", SessionID: "s", Workdir: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(48 * time.Hour)
	res, err := e.db.Sweep(e.ctx)
	if err != nil || res.Pruned != 1 {
		t.Fatalf("Sweep = %+v, %v", res, err)
	}
	if n := count(t, e.path, "task_activity", "task_id = ?", done.ID); n != 0 {
		t.Fatalf("%d activity rows outlived their task", n)
	}
	if n := count(t, e.path, "run_sessions", "task_id = ?", done.ID); n != 0 {
		t.Fatal("the run session outlived its task")
	}
	if got, err := e.db.Activity(e.ctx, kept.ID); err != nil || len(got) != 2 {
		t.Fatalf("open task's activity = %+v, %v", got, err)
	}
	if _, ok, err := e.db.RunSession(e.ctx, kept.ID); err != nil || !ok {
		t.Fatalf("open task's session: %v, %v", ok, err)
	}
	if changed, err := e.db.TaskChangedFile(e.ctx, done.ID, "/w/x"); err != nil || changed {
		t.Fatalf("pruned task still reports a changed file: %v, %v", changed, err)
	}
}

// writeV1 writes a schema-version-1 database at path through the real 0001
// migration, with an agent, the operator, a task with a report and a journal
// event in it.
func writeV1(t *testing.T, path string) (taskID string) {
	t.Helper()
	init, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	taskID = relay.NewID()
	const at = "2026-03-01T10:00:00.000Z"
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{string(init), nil},
		{`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, registered_at, last_seen_at)
			VALUES ('operator', 'human', 'Operator', 'human', '["text-input","text-output"]', ?, ?)`, []any{at, at}},
		{`INSERT INTO agents (slug, display_name, model_slug, capabilities, details, registered_at, last_seen_at)
			VALUES ('builder', 'Builder', 'model-x', '["code-execution"]', 'Builds things.', ?, ?)`, []any{at, at}},
		{`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, status, created_at, updated_at)
			VALUES (?, 'operator', 'builder', 'Old task', 'From version 1.', 'queued', ?, ?)`, []any{taskID, at, at}},
		{`INSERT INTO reports (id, task_id, kind, message, created_at) VALUES (?, ?, 'progress', 'Noted.', ?)`, []any{relay.NewID(), taskID, at}},
		{`INSERT INTO events (recipient_slug, type, task_id, summary, created_at) VALUES ('operator', 'task-progress', ?, 'builder: Noted.', ?)`, []any{taskID, at}},
		{`INSERT INTO settings (key, value) VALUES ('chain.maxDepth', '7')`, nil},
		{`PRAGMA user_version = 1`, nil},
	} {
		if _, err := raw.Exec(stmt.q, stmt.args...); err != nil {
			t.Fatalf("write v1 database: %v", err)
		}
	}
	return taskID
}

func TestMigrateVersion1InPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	taskID := writeV1(t, path)

	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("Open of a version 1 database: %v", err)
	}
	defer db.Close()
	ctx := t.Context()
	var version int
	if err := rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != store.SchemaVersion {
		t.Fatalf("user_version = %d (%v), want SchemaVersion %d", version, err, store.SchemaVersion)
	}
	a, err := db.GetAgent(ctx, "builder")
	if err != nil || a.DisplayName != "Builder" || a.Details != "Builds things." || !equalStrings(a.Capabilities, []string{"code-execution"}) {
		t.Fatalf("migrated agent = %+v, %v", a, err)
	}
	task, err := db.Task(ctx, taskID)
	if err != nil || task.Title != "Old task" || task.Status != relay.StatusQueued || len(task.Reports) != 1 || task.Reports[0].Message != "Noted." {
		t.Fatalf("migrated task = %+v, %v", task, err)
	}
	evs, err := db.ListEvents(ctx, relay.EventFilter{})
	if err != nil || len(evs) != 1 || evs[0].Summary != "builder: Noted." {
		t.Fatalf("migrated events = %+v, %v", evs, err)
	}
	if s, err := db.Settings(ctx); err != nil || s.MaxChainDepth != 7 {
		t.Fatalf("migrated settings = %+v, %v", s, err)
	}

	// The new tables work on the migrated data, cascades included.
	if _, err := db.SaveWorker(ctx, workerConfig("builder")); err != nil {
		t.Fatalf("SaveWorker after migration: %v", err)
	}
	if got, err := db.AppendActivity(ctx, taskID, []relay.ActivityEntry{{Kind: relay.StepStart, Text: "Go"}}); err != nil || got[0].Seq != 1 {
		t.Fatalf("AppendActivity after migration = %+v, %v", got, err)
	}
	if err := store.IntegrityCheck(path); err != nil {
		t.Fatal(err)
	}
	var fk int
	if err := rawDB(t, path).QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d problems, %v", fk, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Opening again is a no-op migration that keeps everything.
	again, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if w, err := again.Worker(ctx, "builder"); err != nil || w.Workdir != "/home/me/project" {
		t.Fatalf("worker after reopen = %+v, %v", w, err)
	}
}

func TestNextSchemaVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	next := store.SchemaVersion + 1
	if _, err := raw.Exec(fmt.Sprintf(`CREATE TABLE t (x); PRAGMA user_version = %d`, next)); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(path, store.Options{})
	if err == nil {
		db.Close()
		t.Fatalf("Open accepted schema version %d", next)
	}
	var version int
	if err := rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != next {
		t.Fatalf("user_version after refusal = %d, %v", version, err)
	}
	if n := count(t, path, "sqlite_master", "name = 'workers'"); n != 0 {
		t.Fatal("the refused database was migrated")
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
