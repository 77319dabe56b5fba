package store_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

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

// Ensure migrating logs one line for the whole move, from the version found
// to the newest ("database migrated from 0 to N"), not one per step, and
// nothing when there is nothing to do.
func TestMigrationLogsOneLine(t *testing.T) {
	open := func(path string) string {
		t.Helper()
		var buf bytes.Buffer
		db, err := store.Open(path, store.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, "migrated") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	fresh := filepath.Join(t.TempDir(), "relay.db")
	want := fmt.Sprintf(`msg="database migrated from 0 to %d" path=%s`, store.SchemaVersion, fresh)
	if got := open(fresh); !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 0 {
		t.Fatalf("a new database logged:\n%s\nwant one line ending %s", got, want)
	}
	if got := open(fresh); got != "" {
		t.Fatalf("an up-to-date database logged:\n%s", got)
	}
	old := filepath.Join(t.TempDir(), "relay.db")
	writeV1(t, old)
	if got := open(old); !strings.Contains(got, fmt.Sprintf(`"database migrated from 1 to %d"`, store.SchemaVersion)) || strings.Count(got, "\n") != 0 {
		t.Fatalf("a version 1 database logged:\n%s", got)
	}
}
