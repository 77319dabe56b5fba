package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// clock is an injectable, advanceable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Every reading moves a millisecond on, so timestamps stay ordered.
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a store on a fresh file with a test clock.
type env struct {
	t     testing.TB
	db    *store.DB
	path  string
	clock *clock
	ctx   context.Context
}

func newEnv(t testing.TB, opts store.Options) *env {
	t.Helper()
	c := newClock()
	if opts.Now == nil {
		opts.Now = c.Now
	}
	path := filepath.Join(t.TempDir(), "data", "relay.db")
	db, err := store.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &env{t: t, db: db, path: path, clock: c, ctx: context.Background()}
}

// undoTaskIndexes takes a database back from version 11 to 10: the task
// and journal indexes before migration 0011.
const undoTaskIndexes = `DROP INDEX tasks_queue; DROP INDEX tasks_leases; DROP INDEX tasks_sender_open;
	DROP INDEX tasks_sender; DROP INDEX tasks_recipient; DROP INDEX tasks_parent;
	CREATE INDEX tasks_queue ON tasks (recipient_slug, status, priority DESC, created_at);
	CREATE INDEX tasks_sender ON tasks (sender_slug, updated_at);
	CREATE INDEX tasks_parent ON tasks (parent_task_id);
	CREATE INDEX tasks_sender_status ON tasks (sender_slug, status);
	CREATE INDEX events_recipient ON events (recipient_slug, sequence);`

// undoAuthEpoch takes a database back from version 10 to 9: the counter
// and the triggers that bump it (migration 0010).
const undoAuthEpoch = `DROP TRIGGER auth_agent_token; DROP TRIGGER auth_agent_gone;
	DROP TRIGGER auth_run_token_changed; DROP TRIGGER auth_run_token_gone;
	DROP TRIGGER auth_worker_added; DROP TRIGGER auth_worker_changed; DROP TRIGGER auth_worker_gone;
	DROP TABLE auth_epoch;`

// undoMeshConversations takes a database back from version 25 to 24: the
// conversations' relays (migration 0025; 0024 changed only rows). Every
// downgrade goes below it: it runs first.
const undoMeshConversations = `DROP TABLE mesh_conversations;
	`

// undoMeshOrder takes a database back from version 25 to 22: the numbers
// of each task's mesh messages (migration 0023), with mesh_task_posted as
// 0020 left it, after undoMeshConversations. Every downgrade goes below
// it: it runs first.
func undoMeshOrder(t testing.TB) string {
	return undoMeshConversations + `DROP TRIGGER mesh_outbox_numbered; DROP TRIGGER mesh_task_posted;
	ALTER TABLE mesh_outbox DROP COLUMN task_seq;
	ALTER TABLE mesh_task_peers DROP COLUMN out_seq; ALTER TABLE mesh_task_peers DROP COLUMN in_seq;
	` + trigger(t, "0020_mesh_word.sql", "mesh_task_posted")
}

// undoWorkerPins takes a database back from version 22 to 21: the
// workers' pinned paths and hook edits (migration 0022). Every downgrade
// goes below it: it runs after undoMeshOrder.
const undoWorkerPins = `ALTER TABLE workers DROP COLUMN pinned_paths; ALTER TABLE workers DROP COLUMN allow_hook_edits;
	`

// undoInsights takes a database back from version 21 to 20: the chart
// aggregates' indexes (migration 0021). Every downgrade goes below it: it
// runs after undoWorkerPins.
const undoInsights = `DROP INDEX tasks_created; DROP INDEX reports_outcomes; DROP INDEX tasks_conversation;
	`

// undoMeshWord takes a database back from version 20 to 19: pinned remote
// names, relay renames and ids scoped to their relay (migration 0020), with
// the mesh triggers as 0013 left them. It runs after undoInsights.
func undoMeshWord(t testing.TB) string {
	return `DROP INDEX mesh_agents_remote; ALTER TABLE mesh_agents DROP COLUMN remote_slug;
	ALTER TABLE mesh_relays DROP COLUMN new_name;
	DROP TABLE mesh_applied;
	CREATE TABLE mesh_applied (msg_id TEXT PRIMARY KEY, from_relay TEXT NOT NULL, task_id TEXT NOT NULL, mark TEXT NOT NULL, applied_at TEXT NOT NULL);
	CREATE INDEX mesh_applied_at ON mesh_applied (applied_at);
	DROP TABLE mesh_held;
	CREATE TABLE mesh_held (seq INTEGER PRIMARY KEY AUTOINCREMENT, msg_id TEXT NOT NULL UNIQUE, from_relay TEXT NOT NULL, reason TEXT NOT NULL,
		task_id TEXT NOT NULL DEFAULT '', title TEXT NOT NULL DEFAULT '', sender_slug TEXT NOT NULL DEFAULT '',
		recipient_slug TEXT NOT NULL DEFAULT '', data BLOB NOT NULL, received_at TEXT NOT NULL);
	CREATE INDEX mesh_held_from ON mesh_held (from_relay, seq);
	DROP INDEX mesh_task_peers_remote; ALTER TABLE mesh_task_peers DROP COLUMN remote_id;
	DROP TRIGGER mesh_task_posted; DROP TRIGGER mesh_task_changed;
	` + trigger(t, "0013_mesh_trust.sql", "mesh_task_posted") + trigger(t, "0013_mesh_trust.sql", "mesh_task_changed")
}

// undoRetiredAgents takes a database back from version 19 to 18: the
// agents' retired_at (migration 0019). Every downgrade goes below it: it
// runs after undoMeshWord.
const undoRetiredAgents = `ALTER TABLE agents DROP COLUMN retired_at;
	`

// undoLiveStreams takes a database back from version 18 to 17: the live
// sessions' stream_seen (migration 0018). Every downgrade goes below it: it
// runs after undoRetiredAgents.
const undoLiveStreams = `ALTER TABLE live_sessions DROP COLUMN stream_seen;
	`

// undoPushSessions takes a database back from version 17 to 16: the push
// rows' session columns and the triggers that write them (migration 0017),
// with the triggers as 0009 and 0012 left them. Every downgrade goes below
// it: it runs after undoLiveStreams.
func undoPushSessions(t testing.TB) string {
	return `DROP TRIGGER push_task; DROP TRIGGER push_event;
	ALTER TABLE push_events DROP COLUMN reply_session; ALTER TABLE push_events DROP COLUMN target_session;
	` + trigger(t, "0009_push_followers.sql", "push_task") +
		trigger(t, "0012_lists_as_comparisons.sql", "push_event")
}

// undoLiveSessions takes a database back from version 16 to 15: live
// sessions and the tasks' session columns (migration 0016). Every downgrade
// goes below it: it runs after undoPushSessions.
const undoLiveSessions = `DROP INDEX tasks_claim_session; ALTER TABLE tasks DROP COLUMN reply_session;
	ALTER TABLE tasks DROP COLUMN claim_session; DROP TABLE live_sessions;
	`

// undoWorkerSandbox reverts migrations 0015 (any-session workers, request
// tokens) and 0014 (the worker sandbox); every downgrade goes below them,
// so downgrade runs it after undoLiveSessions.
const undoWorkerSandbox = `ALTER TABLE workers DROP COLUMN any_session; ALTER TABLE run_sessions DROP COLUMN request_token;
	ALTER TABLE run_sessions DROP COLUMN request_claimed_at;
	ALTER TABLE workers DROP COLUMN sandbox; ALTER TABLE workers DROP COLUMN allow_paths;
	ALTER TABLE workers DROP COLUMN allow_unsandboxed;
	`

// undoMeshTrust takes a database back from version 13 to 12: relay
// admission, held envelopes and task peers (migration 0013), with the mesh
// triggers as 0005 and 0012 left them.
func undoMeshTrust(t testing.TB) string {
	return `DROP TRIGGER mesh_task_posted; DROP TRIGGER mesh_task_changed; DROP TRIGGER mesh_event;
	DROP TABLE mesh_task_peers; DROP TABLE mesh_held;
	ALTER TABLE mesh_relays DROP COLUMN name; ALTER TABLE mesh_relays DROP COLUMN state;
	ALTER TABLE mesh_relays DROP COLUMN new_key; ALTER TABLE mesh_relays DROP COLUMN changed_at;
	` + trigger(t, "0005_mesh.sql", "mesh_task_posted") +
		trigger(t, "0012_lists_as_comparisons.sql", "mesh_task_changed") +
		trigger(t, "0005_mesh.sql", "mesh_event")
}

// downgrade closes e's store, runs undo on its file (which ends by setting
// an older user_version) and opens it again, so the migrations after that
// version run on what the test left in it. Every downgrade goes below 13,
// so the undoing of 0023 down to 0013 runs first.
func (e *env) downgrade(undo string) {
	e.t.Helper()
	e.reopenAfter(undoMeshOrder(e.t) + undoWorkerPins + undoInsights + undoMeshWord(e.t) + undoRetiredAgents + undoLiveStreams + undoPushSessions(e.t) + undoLiveSessions + undoWorkerSandbox + undoMeshTrust(e.t) + undo)
}

// reopenAfter closes e's store, runs undo on its file (which ends by
// setting an older user_version) and opens it again, migrating it.
func (e *env) reopenAfter(undo string) {
	e.t.Helper()
	if err := e.db.Close(); err != nil {
		e.t.Fatal(err)
	}
	raw := rawDB(e.t, e.path)
	if _, err := raw.Exec(undo); err != nil {
		e.t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		e.t.Fatal(err)
	}
	db, err := store.Open(e.path, store.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	e.db = db
}

func (e *env) register(slug string, caps ...string) relay.Agent {
	e.t.Helper()
	if len(caps) == 0 {
		caps = []string{"text-input", "text-output"}
	}
	a, err := e.db.RegisterAgent(e.ctx, relay.RegisterInput{Slug: slug, DisplayName: "Agent " + slug, ModelSlug: "model-x", Capabilities: caps})
	if err != nil {
		e.t.Fatalf("RegisterAgent(%s): %v", slug, err)
	}
	return a
}

// agents registers each slug with the default capabilities.
func (e *env) agents(slugs ...string) {
	e.t.Helper()
	for _, s := range slugs {
		e.register(s)
	}
}

// sentTask registers alice and bob and posts one task from alice to bob.
func (e *env) sentTask() relay.Task {
	e.t.Helper()
	e.agents("alice", "bob")
	return e.post("alice", "bob", title, 0)
}

func (e *env) post(from, to, title string, priority int) relay.Task {
	e.t.Helper()
	task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "Do " + title, Priority: priority})
	if err != nil {
		e.t.Fatalf("PostTask(%s): %v", title, err)
	}
	return task
}

func (e *env) claim(slug string) *relay.Task {
	e.t.Helper()
	task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: slug})
	if err != nil {
		e.t.Fatalf("ClaimNext(%s): %v", slug, err)
	}
	return task
}

// claimLease claims slug's next task with a lease of seconds.
func (e *env) claimLease(slug string, seconds int) {
	e.t.Helper()
	if _, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: slug, LeaseSeconds: seconds}); err != nil {
		e.t.Fatalf("ClaimNext(%s): %v", slug, err)
	}
}

func (e *env) mustClaim(slug string) relay.Task {
	e.t.Helper()
	task := e.claim(slug)
	if task == nil {
		e.t.Fatalf("ClaimNext(%s): got nothing", slug)
	}
	return *task
}

func (e *env) report(slug, id, kind, msg string) relay.Task {
	e.t.Helper()
	task, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: slug, TaskID: id, Kind: kind, Message: msg})
	if err != nil {
		e.t.Fatalf("ReportTask(%s, %s): %v", kind, msg, err)
	}
	return task
}

func (e *env) updates(slug string) relay.Updates {
	e.t.Helper()
	u, err := e.db.ReadUpdates(e.ctx, slug, 0)
	if err != nil {
		e.t.Fatalf("ReadUpdates(%s): %v", slug, err)
	}
	return u
}

func (e *env) task(id string) relay.Task {
	e.t.Helper()
	task, err := e.db.Task(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Task(%s): %v", id, err)
	}
	return task
}

// eventTypes lists the types of events.
func eventTypes(evs []relay.Event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// wantCode fails unless err carries the domain code want.
func wantCode(t testing.TB, err error, want string) {
	t.Helper()
	if got := relay.ErrorCode(err); got != want {
		t.Fatalf("error code = %q (%v), want %q", got, err, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// listCase is a filter for a store list call and the field values of the
// items it must list, in order.
type listCase[F any, V comparable] struct {
	name string
	f    F
	want []V
}

// checkList runs list with each case's filter and compares field of each
// listed item with the case's want.
func checkList[F, T any, V comparable](t *testing.T, ctx context.Context, list func(context.Context, F) ([]T, error), field func(T) V, cases []listCase[F, V]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, err := list(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]V, 0, len(items))
			for _, it := range items {
				got = append(got, field(it))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
		})
	}
}
