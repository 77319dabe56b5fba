package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// upstreamFixture is the upstream relay's own data folder (see
// testdata/upstream/README.md, a copy of ../shared/fixtures/upstream).
const upstreamFixture = "testdata/upstream/relay.db"

type upstreamExpected struct {
	TableCounts map[string]int `json:"tableCounts"`
	Agents      []struct {
		Slug        string  `json:"slug"`
		DisplayName string  `json:"displayName"`
		Token       *string `json:"token"`
		TokenActive bool    `json:"tokenActive"`
	} `json:"agents"`
	Tasks []struct {
		ID          string   `json:"id"`
		Title       string   `json:"title"`
		Status      string   `json:"status"`
		Sender      string   `json:"sender"`
		Recipient   string   `json:"recipient"`
		Priority    int      `json:"priority"`
		Parent      *string  `json:"parentTaskId"`
		Reports     int      `json:"reports"`
		ReportKinds []string `json:"reportKinds"`
		Depth       int      `json:"depth"`
	} `json:"tasks"`
	Cursors       map[string]int64 `json:"cursors"`
	UnreadUpdates map[string]int   `json:"unreadUpdates"`
	Settings      map[string]string
	InvalidTokens []struct {
		Token string `json:"token"`
	} `json:"invalidTokens"`
}

func loadExpected(t *testing.T) upstreamExpected {
	t.Helper()
	b, err := os.ReadFile("testdata/upstream/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e upstreamExpected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// copyFixture puts the upstream relay.db at dir/relay.db, the way a user
// switching from the upstream relay has it.
func copyFixture(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(upstreamFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "relay.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetectUpstream(t *testing.T) {
	up, v, err := store.DetectUpstream(upstreamFixture)
	if err != nil || !up || v != 6 {
		t.Fatalf("fixture: upstream=%v version=%d err=%v; want true, 6", up, v, err)
	}
	ours := newEnv(t, store.Options{})
	if up, _, err := store.DetectUpstream(ours.path); err != nil || up {
		t.Fatalf("our own database: upstream=%v err=%v", up, err)
	}
	if up, _, err := store.DetectUpstream(filepath.Join(t.TempDir(), "missing.db")); err != nil || up {
		t.Fatalf("missing file: upstream=%v err=%v", up, err)
	}
}

// Opening a data folder that holds the upstream relay.db says so (never
// "upgrade Crosschat Relay") and leaves the file as it was.
func TestOpenRefusesUpstreamUntouched(t *testing.T) {
	path := copyFixture(t, t.TempDir())
	before := fileSum(t, path)
	_, err := store.Open(path, store.Options{})
	if !store.IsUpstream(err) {
		t.Fatalf("Open: %v, want an UpstreamError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "upgrade") || !strings.Contains(msg, "import-upstream") {
		t.Fatalf("message %q: must name import-upstream and not ask for an upgrade", msg)
	}
	if fileSum(t, path) != before {
		t.Fatal("Open changed the upstream file")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("Open left files beside the upstream database: %v", entries)
	}
}

func TestImportUpstreamInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := copyFixture(t, dir)
	orig := fileSum(t, path)

	res, err := store.ImportUpstream(ctx, path, path, store.ImportOptions{KnownHarness: func(h string) bool { return h == "custom" }})
	if err != nil {
		t.Fatalf("ImportUpstream: %v", err)
	}
	if res.AlreadyImported || res.UpstreamVersion != 6 {
		t.Fatalf("result %+v", res)
	}
	if res.Kept != filepath.Join(dir, "relay-upstream.db") || fileSum(t, res.Kept) != orig {
		t.Fatalf("the upstream file is not kept unchanged at relay-upstream.db: %+v", res)
	}
	if res.Backup == "" || fileSum(t, res.Backup) != orig {
		t.Fatalf("no byte-for-byte backup: %+v", res)
	}
	want := loadExpected(t)
	for _, table := range []string{"agents", "tasks", "reports", "events", "invites", "task_activity", "workers"} {
		if res.Counts[table] != want.TableCounts[table] {
			t.Errorf("imported %d %s, want %d", res.Counts[table], table, want.TableCounts[table])
		}
	}
	checkImported(t, path, want)

	// Twice: nothing changes, not even a byte of either file.
	dbSum, keptSum := fileSum(t, path), fileSum(t, res.Kept)
	again, err := store.ImportUpstream(ctx, path, path, store.ImportOptions{})
	if err != nil || !again.AlreadyImported {
		t.Fatalf("second import: %+v, %v; want AlreadyImported", again, err)
	}
	if fileSum(t, path) != dbSum || fileSum(t, res.Kept) != keptSum {
		t.Fatal("the second import changed a file")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 5 { // relay.db(+wal, shm), relay-upstream.db, the backup
		t.Fatalf("files after two imports: %v", names)
	}
}

func TestImportUpstreamFrom(t *testing.T) {
	ctx := context.Background()
	src := copyFixture(t, filepath.Join(t.TempDir(), "old"))
	orig := fileSum(t, src)
	dst := filepath.Join(t.TempDir(), "data", "relay.db")
	res, err := store.ImportUpstream(ctx, src, dst, store.ImportOptions{KnownHarness: func(string) bool { return false }})
	if err != nil {
		t.Fatalf("ImportUpstream: %v", err)
	}
	if res.Kept != src || fileSum(t, src) != orig {
		t.Fatal("the source was moved or changed")
	}
	if entries, _ := os.ReadDir(filepath.Dir(src)); len(entries) != 1 {
		t.Fatalf("files appeared beside the source: %v", entries)
	}
	if len(res.SkippedWorkers) != 1 || res.Counts["workers"] != 0 {
		t.Fatalf("a worker with an unknown harness must be skipped and named: %+v", res)
	}
	// Again: already imported, nothing changes.
	sum := fileSum(t, dst)
	again, err := store.ImportUpstream(ctx, src, dst, store.ImportOptions{})
	if err != nil || !again.AlreadyImported || fileSum(t, dst) != sum {
		t.Fatalf("second import: %+v, %v (changed: %v)", again, err, fileSum(t, dst) != sum)
	}
	// Into a relay that holds other data: refused.
	e := newEnv(t, store.Options{})
	e.register("someone")
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ImportUpstream(ctx, src, e.path, store.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("import into a used relay: %v, want a refusal", err)
	}
	// Our own file is not an upstream one.
	if _, err := store.ImportUpstream(ctx, dst, filepath.Join(t.TempDir(), "relay.db"), store.ImportOptions{}); err == nil {
		t.Fatal("importing our own database must fail")
	}
}

// checkImported opens the imported database with the store and compares
// what the relay sees with what the upstream relay had.
func checkImported(t *testing.T, path string, want upstreamExpected) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open imported: %v", err)
	}
	defer db.Close()
	for _, a := range want.Agents {
		got, err := db.GetAgent(ctx, a.Slug)
		if err != nil || got.DisplayName != a.DisplayName {
			t.Errorf("agent %s: %+v, %v", a.Slug, got, err)
		}
		if a.Token == nil {
			continue
		}
		// An import brings no credential: the tokens that worked upstream
		// are refused too (the import names their agents, which get new
		// ones: TestImportBringsNoCredential).
		if p, err := db.Authenticate(ctx, *a.Token); err == nil {
			t.Errorf("token of %s (active upstream: %v) accepted as %+v", a.Slug, a.TokenActive, p)
		}
	}
	for _, it := range want.InvalidTokens {
		if _, err := db.Authenticate(ctx, it.Token); err == nil {
			t.Errorf("invalid token %s accepted", it.Token)
		}
	}
	for _, w := range want.Tasks {
		got, err := db.Task(ctx, w.ID)
		if err != nil {
			t.Errorf("task %s: %v", w.ID, err)
			continue
		}
		var kinds []string
		for _, r := range got.Reports {
			kinds = append(kinds, string(r.Kind))
		}
		parent := ""
		if w.Parent != nil {
			parent = *w.Parent
		}
		if got.Title != w.Title || string(got.Status) != w.Status || got.SenderSlug != w.Sender || got.RecipientSlug != w.Recipient ||
			got.Priority != w.Priority || got.Depth != w.Depth || len(got.Reports) != w.Reports || strings.Join(kinds, ",") != strings.Join(w.ReportKinds, ",") || got.ParentTaskID != parent {
			t.Errorf("task %s: %+v, want %+v", w.ID, got, w)
		}
	}
	for slug, unread := range want.UnreadUpdates {
		u, err := db.ReadUpdates(ctx, slug, 100)
		if err != nil {
			t.Errorf("read_updates %s: %v", slug, err)
			continue
		}
		if len(u.Updates) != unread {
			t.Errorf("%s: %d unread updates, want %d (cursor %d)", slug, len(u.Updates), unread, want.Cursors[slug])
		}
	}
	s, err := db.Settings(ctx)
	if err != nil || s.MaxChainDepth != 5 || !s.WorkersPaused {
		t.Errorf("settings %+v, %v; want maxChainDepth 5, paused", s, err)
	}
	workers, err := db.ListWorkers(ctx)
	if err != nil || len(workers) != 1 || workers[0].AgentSlug != "deployer-bot" || workers[0].RunsPerHour != 5 || workers[0].TimeoutMinutes != 10 {
		t.Errorf("workers %+v, %v", workers, err)
	}
	act, err := db.Activity(ctx, "58c8f22a-f1d1-4105-bb0f-b8608215fe5e")
	if err != nil || len(act) != 4 {
		t.Errorf("activity: %d entries, %v", len(act), err)
	}
	// A new task gets the next journal sequence, after the imported 31.
	if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "builder-codex", Title: "After import", Instructions: "x", Priority: 3}); err != nil {
		t.Fatal(err)
	}
	if c, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "builder-codex", FromSenders: []string{"operator"}, Via: relay.ViaChat}); err != nil || c == nil || c.Title != "After import" {
		t.Fatalf("claim after import: %+v, %v", c, err)
	}
	ev, err := db.ListEvents(ctx, relay.EventFilter{Limit: 1})
	if err != nil || len(ev) != 1 || ev[0].Sequence <= 31 {
		t.Errorf("newest event %+v, %v; want a sequence after 31", ev, err)
	}
}

// TestImportedWorkersArriveDisabled ensures every imported worker is
// disabled and listed with what it would run, and that a preset's command
// and arguments from the file are dropped (the preset's own program is
// found when the operator enables it); a custom program's are kept, to be
// read before enabling.
func TestImportedWorkersArriveDisabled(t *testing.T) {
	for _, tc := range []struct {
		harness, wantCommand string
		wantArgs             []string
	}{
		{relay.HarnessCustom, "/home/dev/fixture-work/bin/fixture-worker.sh", []string{"--checklist", "deploy-checklist.md"}},
		{"claude-code", "", []string{}},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			ctx := context.Background()
			src := copyFixture(t, filepath.Join(t.TempDir(), "old"))
			if tc.harness != relay.HarnessCustom {
				setUpstreamHarness(t, src, tc.harness)
			}
			dst := filepath.Join(t.TempDir(), "data", "relay.db")
			res, err := store.ImportUpstream(ctx, src, dst, store.ImportOptions{})
			if err != nil {
				t.Fatalf("ImportUpstream: %v", err)
			}
			if len(res.Workers) != 1 {
				t.Fatalf("imported workers %+v", res.Workers)
			}
			w := res.Workers[0]
			if w.AgentSlug != "deployer-bot" || w.Harness != tc.harness || w.Command != tc.wantCommand || strings.Join(w.Args, " ") != strings.Join(tc.wantArgs, " ") ||
				w.Workdir != "/home/dev/fixture-work/deploy" || strings.Join(w.AllowedSenders, ",") != "operator" {
				t.Fatalf("summary %+v", w)
			}
			db, err := store.Open(dst, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			got, err := db.ListWorkers(ctx)
			if err != nil || len(got) != 1 || got[0].Enabled || got[0].Command != tc.wantCommand || len(got[0].Args) != len(tc.wantArgs) {
				t.Fatalf("stored workers %+v, %v; want one, disabled", got, err)
			}
		})
	}
}

// setUpstreamHarness sets the upstream worker's harness in the file at path.
func setUpstreamHarness(t *testing.T, path, harness string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE workers SET harness = ?`, harness); err != nil {
		t.Fatal(err)
	}
}
