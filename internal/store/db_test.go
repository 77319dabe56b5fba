package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// rawDB opens a second, independent connection to the store's file, for
// inspecting or tampering with it behind the store's back.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// A new database file gets 2048-byte pages (fewer bytes per commit, see
// db.go); an existing file keeps its own, and both work in WAL mode.
func TestPageSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing int // page size of a file made before Open; 0 for none, -1 for an empty file
		want     int
	}{
		{"new file", 0, 2048},
		{"empty file", -1, 2048},
		{"existing 4096", 4096, 4096},
		{"existing 1024", 1024, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "relay.db")
			if tc.existing == -1 {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.existing > 0 {
				raw, err := sql.Open("sqlite3", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := raw.Exec("PRAGMA page_size = " + strconv.Itoa(tc.existing) + "; CREATE TABLE scratch (a)"); err != nil {
					t.Fatal(err)
				}
				if err := raw.Close(); err != nil {
					t.Fatal(err)
				}
			}
			db, err := store.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := db.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			var size int
			var mode string
			raw := rawDB(t, path)
			if err := raw.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
				t.Fatal(err)
			}
			if err := raw.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if size != tc.want || mode != "wal" {
				t.Fatalf("page_size %d, journal_mode %q; want %d, wal", size, mode, tc.want)
			}
		})
	}
}

func TestOpenCreatesDataDirAndOperator(t *testing.T) {
	e := newEnv(t, store.Options{})
	info, err := os.Stat(filepath.Dir(e.path))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir mode = %o, want 700", perm)
	}
	if got := e.db.OperatorSlug(); got != "operator" {
		t.Errorf("OperatorSlug = %q", got)
	}
	op, err := e.db.GetAgent(e.ctx, "operator")
	if err != nil {
		t.Fatal(err)
	}
	if op.Kind != relay.KindHuman || op.DisplayName != "Operator" || op.ModelSlug != "human" || op.HasToken ||
		!equalStrings(op.Capabilities, []string{"text-input", "text-output"}) || !strings.Contains(op.Details, "dashboard") {
		t.Fatalf("operator = %+v", op)
	}
	_, err = e.db.IssueToken(e.ctx, "operator")
	wantCode(t, err, relay.EInvalidAgentKind)
	if err := e.db.DeleteAgent(e.ctx, "operator"); relay.ErrorCode(err) != relay.EOperatorProtected {
		t.Fatalf("DeleteAgent(operator) = %v", err)
	}

	var version int
	if err := rawDB(t, e.path).QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != store.SchemaVersion {
		t.Fatalf("user_version = %d, want %d", version, store.SchemaVersion)
	}
	var mode string
	if err := rawDB(t, e.path).QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

func TestOpenOperatorSlug(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"", "operator", true},
		{" Boss ", "boss", true},
		{"team.lead:1", "team.lead:1", true},
		{"x", "", false},
		{"-dash", "", false},
		{"has space", "", false},
	}
	for _, tc := range cases {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "relay.db")
			db, err := store.Open(path, store.Options{OperatorSlug: tc.in})
			if !tc.ok {
				if err == nil {
					db.Close()
					t.Fatalf("Open accepted operator slug %q", tc.in)
				}
				if !strings.Contains(err.Error(), "operator slug") {
					t.Fatalf("error %q does not name the operator slug", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if db.OperatorSlug() != tc.want {
				t.Fatalf("OperatorSlug = %q, want %q", db.OperatorSlug(), tc.want)
			}
			a, err := db.GetAgent(context.Background(), tc.want)
			if err != nil || a.Kind != relay.KindHuman {
				t.Fatalf("operator agent = %+v, %v", a, err)
			}
		})
	}
}

func TestStateSurvivesReopen(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	task := e.post("alice", "bob", "Persist me", 3)
	e.mustClaim("bob")
	e.report("bob", task.ID, relay.ReportProgress, "Halfway there")
	token, err := e.db.IssueToken(e.ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.UpdateSettings(e.ctx, relay.Settings{MaxChainDepth: 7, WorkersPaused: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := e.db.Heartbeat(e.ctx, "bob"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("write after Close = %v, want ErrClosed", err)
	}

	db, err := store.Open(e.path, store.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Task(e.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != relay.StatusClaimed || got.Priority != 3 || len(got.Reports) != 1 || got.Reports[0].Message != "Halfway there" {
		t.Fatalf("task after reopen = %+v", got)
	}
	p, err := db.Authenticate(e.ctx, token)
	if err != nil || p.Slug != "bob" {
		t.Fatalf("Authenticate after reopen = %+v, %v", p, err)
	}
	s, err := db.Settings(e.ctx)
	if err != nil || s.MaxChainDepth != 7 || !s.WorkersPaused {
		t.Fatalf("settings after reopen = %+v, %v", s, err)
	}
	u, err := db.ReadUpdates(e.ctx, "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !equalStrings(eventTypes(u.Updates), []string{relay.EventTaskClaimed, relay.EventTaskProgress}) {
		t.Fatalf("alice updates after reopen = %v", eventTypes(u.Updates))
	}
	agents, err := db.ListAgents(e.ctx, true)
	if err != nil || len(agents) != 3 {
		t.Fatalf("agents after reopen = %+v, %v (operator must not be duplicated)", agents, err)
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestNewerSchemaRefusedAndUntouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "relay.db")
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE future (x TEXT); INSERT INTO future VALUES ('from the future'); PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileSum(t, path)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	db, err := store.Open(path, store.Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open accepted a database from a newer version")
	}
	msg := err.Error()
	for _, want := range []string{"99", strconv.Itoa(store.SchemaVersion), "upgrade Crosschat Relay"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if fileSum(t, path) != before {
		t.Fatal("the newer database file was modified")
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(info.ModTime()) {
		t.Fatal("the newer database file's mtime changed")
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("Open left %s behind", suffix)
		}
	}
}

func TestIntegrityCheck(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("alice")
	e.post("alice", "operator", "Check me", 0)
	if err := store.IntegrityCheck(e.path); err != nil {
		t.Fatalf("IntegrityCheck on a live store: %v", err)
	}
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.IntegrityCheck(e.path); err != nil {
		t.Fatalf("IntegrityCheck on a closed store: %v", err)
	}

	missing := filepath.Join(t.TempDir(), "missing.db")
	if err := store.IntegrityCheck(missing); err == nil {
		t.Fatal("IntegrityCheck accepted a missing file")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("IntegrityCheck created the missing file")
	}

	garbage := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.IntegrityCheck(garbage); err == nil {
		t.Fatal("IntegrityCheck accepted a garbage file")
	}

	// Corrupt one page in the middle of a real database.
	corrupt := filepath.Join(t.TempDir(), "corrupt.db")
	raw, err := sql.Open("sqlite3", "file:"+corrupt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE t (x TEXT); CREATE INDEX t_x ON t (x)`); err != nil {
		t.Fatal(err)
	}
	fill, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if _, err := fill.Exec(`INSERT INTO t VALUES (?)`, strings.Repeat("row", 20)+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fill.Commit(); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	b, err := os.ReadFile(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 3 * 4096; i < 3*4096+4096; i++ {
		b[i] = 0x5a
	}
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.IntegrityCheck(corrupt); err == nil {
		t.Fatal("IntegrityCheck accepted a corrupted database")
	}
}

func TestHealthFollowsTheLastWrite(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("alice")
	if !e.db.Healthy() {
		t.Fatal("a fresh store is unhealthy")
	}
	// A refused action is not a failure of the store.
	if _, err := e.db.Heartbeat(e.ctx, "nobody"); relay.ErrorCode(err) != relay.EUnknownAgent {
		t.Fatalf("Heartbeat(nobody) = %v", err)
	}
	if !e.db.Healthy() {
		t.Fatal("a domain refusal marked the store unhealthy")
	}
	// Break one table behind the store's back: the next write to it fails.
	if _, err := rawDB(t, e.path).Exec(`DROP TABLE settings`); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.UpdateSettings(e.ctx, relay.Settings{MaxChainDepth: 2})
	if err == nil || relay.IsDomain(err) {
		t.Fatalf("UpdateSettings on a dropped table = %v, want an internal error", err)
	}
	if !strings.HasPrefix(err.Error(), "update settings: ") {
		t.Errorf("error %q lacks its context", err)
	}
	if e.db.Healthy() {
		t.Fatal("a failed write left the store healthy")
	}
	e.register("bob")
	if !e.db.Healthy() {
		t.Fatal("a successful write did not restore health")
	}
}

// drain returns the changes received within a short quiet period.
func drain(ch <-chan relay.Change, quiet time.Duration) []relay.Change {
	var out []relay.Change
	for {
		select {
		case c, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, c)
		case <-time.After(quiet):
			return out
		}
	}
}

func TestPublishOnlyAfterCommit(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	task := e.post("alice", "bob", "Do not cancel me", 0)
	changes, stop := e.db.Subscribe(64)
	defer stop()

	// Refused actions publish nothing.
	_, err := e.db.CancelTask(e.ctx, "bob", task.ID, "I am not the sender")
	wantCode(t, err, relay.ETaskCancelDenied)
	_, err = e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Draw", Instructions: "A cat", RequiredCapabilities: []string{"image-output"}})
	wantCode(t, err, relay.ERecipientLacksCapability)
	if got := drain(changes, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("refused actions published %+v", got)
	}

	// A change that was queued inside a transaction that then fails is
	// discarded: a claim for an unknown recipient first requeues its expired
	// lease (queueing a task change, an event and a wake-up), then fails.
	e.mustClaim("bob")
	if _, err := rawDB(t, e.path).Exec(`UPDATE tasks SET recipient_slug = 'ghost', lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE id = ?`, task.ID); err != nil {
		t.Fatal(err)
	}
	drain(changes, 20*time.Millisecond)
	_, err = e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "ghost"})
	wantCode(t, err, relay.EUnknownAgent)
	if got := drain(changes, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("a rolled-back transaction published %+v", got)
	}
	if got := e.task(task.ID); got.Status != relay.StatusClaimed || len(got.Reports) != 0 {
		t.Fatalf("rolled-back requeue left task %+v", got)
	}

	// A committed post publishes its task, readable by the time it arrives.
	posted := e.post("alice", "bob", "Publish me", 0)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-changes:
			if c.Type != relay.ChangeTask || c.Task.ID != posted.ID {
				continue
			}
			if c.Task.Status != relay.StatusQueued || c.Task.Title != "Publish me" || c.Task.ReportCount != 0 {
				t.Fatalf("task change = %+v", c.Task)
			}
			if _, err := e.db.Task(e.ctx, posted.ID); err != nil {
				t.Fatalf("task published before it was readable: %v", err)
			}
			return
		case <-deadline:
			t.Fatal("post published no task change")
		}
	}
}
