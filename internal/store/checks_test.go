package store_test

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// explainOps returns the opcodes of the program SQLite compiles for stmt,
// triggers included, with every parameter bound to NULL.
func explainOps(t *testing.T, raw *sql.DB, stmt string) []string {
	t.Helper()
	rows, err := raw.Query("EXPLAIN "+stmt, make([]any, strings.Count(stmt, "?"))...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", stmt, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, fmt.Sprint(vals[1])) // addr, opcode, p1, …
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// temporaryTable returns the opcode with which stmt's program builds a
// temporary table, or "" when it builds none.
func temporaryTable(t *testing.T, raw *sql.DB, stmt string) string {
	t.Helper()
	for _, op := range explainOps(t, raw, stmt) {
		if op == "OpenEphemeral" || op == "OpenAutoindex" {
			return op
		}
	}
	return ""
}

// writeStatements returns, for every table of the schema, an INSERT of
// all its columns and, for each column, an UPDATE of it by primary key:
// what any write the relay makes compiles its constraints, indexes and
// triggers from.
func writeStatements(t *testing.T, raw *sql.DB) []string {
	t.Helper()
	tables, err := raw.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		if err := tables.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := tables.Close(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, table := range names {
		var cols, key []string
		info, err := raw.Query(`SELECT name, pk FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			t.Fatal(err)
		}
		for info.Next() {
			var (
				name string
				pk   int
			)
			if err := info.Scan(&name, &pk); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, name)
			if pk > 0 {
				key = append(key, name+" = ?")
			}
		}
		if err := info.Close(); err != nil {
			t.Fatal(err)
		}
		where := "rowid = ?"
		if len(key) > 0 {
			where = strings.Join(key, " AND ")
		}
		out = append(out, fmt.Sprintf("INSERT INTO %s (%s) VALUES (?%s)", table, strings.Join(cols, ", "), strings.Repeat(", ?", len(cols)-1)))
		for _, c := range cols {
			out = append(out, fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s", table, c, where))
		}
	}
	return out
}

// No write builds a temporary table. SQLite evaluates `x IN (a, b, c)` in
// a CHECK constraint, an index's condition or a trigger, and copies an
// INSERT … SELECT into a table with triggers, through a table it builds
// each time the statement runs, with a page cache of its own (migration
// 0012: about a sixth of the relay's CPU per call). A constraint, index or
// trigger written that way fails here.
func TestWritesBuildNoTemporaryTables(t *testing.T) {
	e := newEnv(t, store.Options{})
	raw := rawDB(t, e.path)
	stmts := writeStatements(t, raw)
	if len(stmts) < 50 {
		t.Fatalf("only %d statements from the schema; is it read?", len(stmts))
	}
	for _, stmt := range stmts {
		if op := temporaryTable(t, raw, stmt); op != "" {
			t.Errorf("%s builds a temporary table (%s)", stmt, op)
		}
	}
}

// The mesh's publisher reads the outbox after every commit that added rows,
// nearly always with rows in flight and nothing skipped or waiting: that
// read builds no temporary table either (the rows in flight are left out as
// they are read).
func TestOutboxReadBuildsNoTemporaryTable(t *testing.T) {
	e := newEnv(t, store.Options{})
	raw := rawDB(t, e.path)
	if op := temporaryTable(t, raw, store.OutboxSQL(nil, nil)); op != "" {
		t.Errorf("the outbox read builds a temporary table (%s): %s", op, store.OutboxSQL(nil, nil))
	}
	// What it is checked against: a list in the SQL builds one.
	if op := temporaryTable(t, raw, store.OutboxSQL([]string{"r"}, nil)); op == "" {
		t.Errorf("the outbox read skipping a relay builds no temporary table; is the check blind?")
	}
}

// trigger returns the CREATE TRIGGER statement for name as the migration
// file writes it, so a test that takes a database back to that migration
// recreates the trigger from the migration's own text, not from a copy.
func trigger(t testing.TB, file, name string) string {
	t.Helper()
	b, err := os.ReadFile("migrations/" + file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "CREATE TRIGGER "+name+" ")
	if start < 0 {
		t.Fatalf("%s creates no trigger %s", file, name)
	}
	n := strings.Index(text[start:], "\nEND;")
	if n < 0 {
		t.Fatalf("%s: trigger %s has no END;", file, name)
	}
	return text[start:start+n+len("\nEND;")] + "\n"
}

// undoChains takes a database back to migration 0011's text of what
// migration 0012 changed: the CHECK lists, the open-task index's condition
// and the push_event and mesh_task_changed triggers.
func undoChains(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var version int64
	if err := raw.QueryRow("PRAGMA schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("PRAGMA writable_schema = ON;\n")
	for _, c := range store.ListChecks() {
		fmt.Fprintf(&b, "UPDATE sqlite_schema SET sql = replace(sql, '%s', '%s') WHERE name = '%s';\n",
			strings.ReplaceAll(c.Chain, "'", "''"), strings.ReplaceAll(c.List, "'", "''"), c.Table)
	}
	fmt.Fprintf(&b, "PRAGMA schema_version = %d;\nPRAGMA writable_schema = OFF;\n", version+1)
	b.WriteString(`DROP INDEX tasks_sender_open;
		CREATE INDEX tasks_sender_open ON tasks (sender_slug) WHERE status IN ('queued', 'claimed', 'blocked');
		DROP TRIGGER push_event;
		`)
	b.WriteString(trigger(t, "0009_push_followers.sql", "push_event"))
	b.WriteString("DROP TRIGGER mesh_task_changed;\n")
	b.WriteString(trigger(t, "0005_mesh.sql", "mesh_task_changed"))
	b.WriteString("PRAGMA user_version = 11;")
	return b.String()
}

// Migration 0012 rewrites the CHECK lists of a database made before it in
// place: the rows stay, the constraints still refuse what they refused,
// the open-task cap still counts through its index, a followed agent's
// events still carry the task's title, and no write builds a temporary
// table any more.
func TestMigrationChainsChecks(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ann", "bob")
	if _, err := e.db.OpenPush(e.ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	task := e.post("ann", "bob", "before", 3)
	raw := rawDB(t, e.path)
	undo := undoChains(t, raw)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	e.downgrade(undo)
	raw = rawDB(t, e.path)

	for _, c := range store.ListChecks() {
		var text string
		if err := raw.QueryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, c.Table).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, c.List) || !strings.Contains(text, c.Chain) {
			t.Errorf("%s after the upgrade:\n%s\nwant %q in place of %q", c.Table, text, c.Chain, c.List)
		}
	}
	var check string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	for _, stmt := range []string{
		`UPDATE tasks SET status = 'lost' WHERE id = '` + task.ID + `'`,
		`UPDATE tasks SET priority = 4 WHERE id = '` + task.ID + `'`,
		`INSERT INTO reports (id, task_id, kind, message, created_at) VALUES ('r', '` + task.ID + `', 'done', 'm', 'now')`,
		`INSERT INTO mesh_tasks (task_id, relay_id, mark) VALUES ('` + task.ID + `', 'r', 'maybe')`,
	} {
		_, err := raw.Exec(stmt)
		if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
			t.Errorf("%s after the upgrade: %v, want a CHECK constraint failure", stmt, err)
		}
	}

	if got, err := e.db.GetTask(e.ctx, "ann", task.ID); err != nil || got.Status != relay.StatusQueued || got.Priority != 3 {
		t.Errorf("the task after the upgrade: %+v, %v", got, err)
	}
	set, err := e.db.Settings(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	set.MaxOpenTasksPerSender = 2
	if _, err := e.db.UpdateSettings(e.ctx, set); err != nil {
		t.Fatal(err)
	}
	e.post("ann", "bob", "second", 2)
	_, err = e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "ann", RecipientSlug: "bob", Title: "third", Instructions: "x"})
	wantCode(t, err, relay.ETooManyOpenTasks)

	e.mustClaim("bob")
	batch, err := e.db.SessionPushEvents(e.ctx, relay.LiveSession{AgentSlug: "ann"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(batch.Events); n == 0 || batch.Events[n-1].Title != "before" || batch.Events[n-1].From != "bob" || batch.Events[n-1].Priority != 3 {
		t.Errorf("ann's push events after the upgrade: %+v; want the claim of %q from bob, priority 3", batch.Events, "before")
	}

	for _, stmt := range writeStatements(t, raw) {
		if op := temporaryTable(t, raw, stmt); op != "" {
			t.Errorf("after the upgrade, %s builds a temporary table (%s)", stmt, op)
		}
	}
}
