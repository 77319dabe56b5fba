package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Tokens a crafted upstream database plants for the import's target.
const (
	plantedOperatorToken = "cca_planted-operator-token-0000000000000000000"
	plantedHumanToken    = "cca_planted-human-token-000000000000000000000"
	plantedInviteCode    = "cci_planted-invite-code-0000000000"
)

// Ensure an import brings no credential: a crafted upstream database that
// gives the built-in operator a token (and turns it into an agent), adds
// a person with a token and an open invite with a known code, imports
// with none of them working, the operator still a person; the agents'
// own tokens arrive revoked too, each agent named in the summary (they
// get a new token), and so do the invites that could still enrol one.
// Before, the operator's token and every agent's worked after the import
// (ON CONFLICT … token_hash), and the planted invite enrolled agents.
func TestImportBringsNoCredential(t *testing.T) {
	ctx := context.Background()
	src := copyFixture(t, filepath.Join(t.TempDir(), "old"))
	raw, err := sql.Open("sqlite3", "file:"+src)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE agents SET token_hash = ?, kind = 'agent' WHERE slug = 'operator'`, []any{relay.HashToken(plantedOperatorToken)}},
		{`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence, token_hash)
			SELECT 'boss', 'human', 'Boss', 'human', capabilities, details, registered_at, last_seen_at, 0, ? FROM agents WHERE slug = 'operator'`,
			[]any{relay.HashToken(plantedHumanToken)}},
		{`INSERT INTO invites (id, code_hash, label, created_at, expires_at, max_uses, uses, revoked)
			VALUES ('11111111-2222-4333-8444-555555555555', ?, 'planted', '2026-12-01T00:00:00.000Z', '2999-01-01T00:00:00.000Z', 100, 0, 0)`,
			[]any{relay.HashToken(plantedInviteCode)}},
	} {
		if _, err := raw.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("craft: %s: %v", q.sql, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "data", "relay.db")
	res, err := store.ImportUpstream(ctx, src, dst, store.ImportOptions{})
	if err != nil {
		t.Fatalf("ImportUpstream: %v", err)
	}
	want := loadExpected(t)
	var hadTokens []string
	for _, a := range want.Agents {
		if a.TokenActive {
			hadTokens = append(hadTokens, a.Slug)
		}
	}
	slices.Sort(hadTokens)
	if got := slices.Sorted(slices.Values(res.RevokedTokens)); !slices.Equal(got, hadTokens) {
		t.Errorf("agents named as revoked: %v, want %v", got, hadTokens)
	}
	// The planted invite, and the fixture's team invite until it expires
	// (2026-12-31).
	if !slices.Contains(res.RevokedInvites, "planted") || len(res.RevokedInvites) > 2 {
		t.Errorf("invites named as revoked: %v, want the open ones", res.RevokedInvites)
	}
	db, err := store.Open(dst, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tokens := []string{plantedOperatorToken, plantedHumanToken}
	for _, a := range want.Agents {
		if a.Token != nil {
			tokens = append(tokens, *a.Token)
		}
	}
	for _, tok := range tokens {
		if p, err := db.Authenticate(ctx, tok); err == nil {
			t.Errorf("the imported token %s works as %+v", tok, p)
		}
	}
	op, err := db.GetAgent(ctx, relay.DefaultOperatorSlug)
	if err != nil || op.Kind != relay.KindHuman || op.HasToken {
		t.Errorf("the operator after the import: %+v, %v", op, err)
	}
	if _, err := db.Enroll(ctx, relay.EnrollInput{Invite: plantedInviteCode, Slug: "intruder", DisplayName: "Intruder", ModelSlug: "m",
		Capabilities: []string{"text-output"}}); err == nil {
		t.Error("the planted invite enrolled an agent")
	}
}

// Ensure an import widens no limit: a crafted upstream database whose
// settings set the hand-off limit past what the relay allows (0..10) does
// not lift it, and one it cannot read does not leave the relay unable to
// read its settings; a valid value still comes along. Before, the value
// was copied as it was: a limit of 1000 let runs hand work off 1000 deep,
// and "abc" made every read of the settings fail (no worker started).
func TestImportWidensNoLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		depth, paused string
		want          relay.Settings
	}{
		{"1000", "true", relay.Settings{MaxChainDepth: relay.DefaultChainLimit, WorkersPaused: true}},
		{"-1", "yes", relay.Settings{MaxChainDepth: relay.DefaultChainLimit}},
		{"abc", "false", relay.Settings{MaxChainDepth: relay.DefaultChainLimit}},
		{" 5", "true", relay.Settings{MaxChainDepth: relay.DefaultChainLimit, WorkersPaused: true}},
		{"7", "false", relay.Settings{MaxChainDepth: 7}},
	} {
		t.Run(tc.depth, func(t *testing.T) {
			_, db := importEdited(t, func(raw *sql.DB) {
				for k, v := range map[string]string{"chain.maxDepth": tc.depth, "workers.paused": tc.paused} {
					if _, err := raw.Exec(`INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v); err != nil {
						t.Fatal(err)
					}
				}
			})
			got, err := db.Settings(ctx)
			if err != nil || got.MaxChainDepth != tc.want.MaxChainDepth || got.WorkersPaused != tc.want.WorkersPaused {
				t.Fatalf("settings after the import: %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// Ensure an import leaves behind a task whose id is no UUID, with its
// reports and run activity, and says how many: here no reader could open or
// cancel it (its id is refused), and its id named its run's folder
// ("../../victim"). A task whose parent it was comes along without one.
func TestImportLeavesTasksWithoutUUIDs(t *testing.T) {
	want := loadExpected(t)
	const bad = "../../victim"
	var id, other string
	var reports, activity int
	res, db := importEdited(t, func(raw *sql.DB) {
		if err := raw.QueryRow(`SELECT task_id FROM task_activity LIMIT 1`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if err := raw.QueryRow(`SELECT id FROM tasks WHERE id <> ? LIMIT 1`, id).Scan(&other); err != nil {
			t.Fatal(err)
		}
		if err := raw.QueryRow(`SELECT (SELECT count(*) FROM reports WHERE task_id = ?1), (SELECT count(*) FROM task_activity WHERE task_id = ?1)`, id, id).Scan(&reports, &activity); err != nil {
			t.Fatal(err)
		}
		execAll(t, raw, `PRAGMA foreign_keys = OFF`,
			`UPDATE tasks SET id = '`+bad+`' WHERE id = '`+id+`'`,
			`UPDATE reports SET task_id = '`+bad+`' WHERE task_id = '`+id+`'`,
			`UPDATE task_activity SET task_id = '`+bad+`' WHERE task_id = '`+id+`'`,
			`UPDATE tasks SET parent_task_id = '`+bad+`' WHERE id = '`+other+`'`)
	})
	if res.SkippedTasks != 1 || res.Counts["tasks"] != want.TableCounts["tasks"]-1 || res.Counts["reports"] != want.TableCounts["reports"]-reports ||
		res.Counts["task_activity"] != want.TableCounts["task_activity"]-activity {
		t.Fatalf("skipped %d, counts %v; want 1 task left behind with its %d reports and %d steps", res.SkippedTasks, res.Counts, reports, activity)
	}
	task, err := db.Task(context.Background(), other)
	if err != nil || task.ParentTaskID != "" {
		t.Fatalf("the task whose parent was left behind: %+v, %v; want it without a parent", task, err)
	}
}

// Ensure an import numbers the journal again from 1, in its order, with
// each agent's read cursor: a file whose newest event had the largest
// number an integer holds stopped every later event here ("database or
// disk is full"), so every claim failed; and its agents still have what
// they had not read.
func TestImportNumbersTheJournalAgain(t *testing.T) {
	ctx := context.Background()
	want := loadExpected(t)
	_, db := importEdited(t, func(raw *sql.DB) {
		// The newest event at the end of the range; cursors past it move with it.
		execAll(t, raw, `UPDATE events SET sequence = 9223372036854775807 WHERE sequence = (SELECT max(sequence) FROM events)`,
			`UPDATE agents SET last_read_sequence = 9223372036854775807 WHERE last_read_sequence >= (SELECT count(*) FROM events)`)
	})
	for slug, unread := range want.UnreadUpdates {
		u, err := db.ReadUpdates(ctx, slug, 100)
		if err != nil || len(u.Updates) != unread {
			t.Errorf("%s's unread updates = %d, %v; want %d", slug, len(u.Updates), err, unread)
		}
	}
	// A claim writes an event (the sender's task-claimed).
	for range 3 {
		if _, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "builder-codex"}); err != nil {
			t.Fatalf("a claim after the import: %v", err)
		}
	}
}

// importEdited imports a copy of the upstream fixture that edit changed
// first (through a connection of one, so a pragma holds), and returns the
// import's result and the store it made, open until the test ends.
func importEdited(t *testing.T, edit func(raw *sql.DB)) (store.ImportResult, *store.DB) {
	t.Helper()
	src := copyFixture(t, filepath.Join(t.TempDir(), "old"))
	raw, err := sql.Open("sqlite3", "file:"+src)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	edit(raw)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "data", "relay.db")
	res, err := store.ImportUpstream(context.Background(), src, dst, store.ImportOptions{})
	if err != nil {
		t.Fatalf("ImportUpstream: %v", err)
	}
	db, err := store.Open(dst, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return res, db
}

// execAll runs each statement on raw, failing the test on an error.
func execAll(t *testing.T, raw *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
