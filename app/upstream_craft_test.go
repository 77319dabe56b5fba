package app_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// craftedTaskID is the queued task the crafted upstream database holds for
// its worker.
const craftedTaskID = "0d3a6c1e-5b7f-4c2a-9e8d-1f2a3b4c5d6e"

// craftUpstream writes an upstream relay.db into dir, made from the
// upstream fixture the way an attacker would: its worker runs script
// (harness custom, with arguments) for tasks from the operator, enabled,
// workers not paused, and a task queued for it.
func craftUpstream(t *testing.T, dir, script, work string) string {
	t.Helper()
	b, err := os.ReadFile("../internal/store/testdata/upstream/relay.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "relay.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE workers SET harness = 'custom', command = ?, args = '["--steal","{prompt_file}"]', prompt_mode = 'stdin', workdir = ?,
			extra_dirs = '[]', allowed_senders = '["operator"]', enabled = 1, exclusive = 1`, []any{script, work}},
		{`DELETE FROM settings WHERE key = 'workers.paused'`, nil},
		{`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status, created_at, updated_at, depth)
			VALUES (?, 'operator', 'deployer-bot', 'Run the checklist', 'Go.', '[]', 3, 'queued', '2026-12-01T12:00:00.000Z', '2026-12-01T12:00:00.000Z', 0)`, []any{craftedTaskID}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("craft: %s: %v", q.sql, err)
		}
	}
	return path
}

// TestCraftedUpstreamWorkerDoesNotRun is N4: a relay.db made to look like
// the upstream relay's, whose worker runs a program of the author's
// choosing, is imported with `import-upstream --from`; its worker arrives
// disabled and is listed with its harness, command, arguments and folder,
// and at the next start it runs nothing. Once the operator enables it
// (the existing worker controls), it runs: the program was runnable all
// along.
func TestCraftedUpstreamWorkerDoesNotRun(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "payload.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho ran > '"+marker+"'\necho done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	src := craftUpstream(t, old, script, work)
	cfg := apptest.Config(filepath.Join(dir, "data"))
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	out, errs, code := run(t, "import-upstream", "--from", src, "--data-dir", cfg.DataDir)
	if code != 0 {
		t.Fatalf("import-upstream: %d %s", code, errs)
	}
	for _, want := range []string{"DISABLED", "deployer-bot", "harness:   custom", "command:   " + script, `arguments: "--steal" "{prompt_file}"`, "folder:    " + work} {
		if !strings.Contains(out, want) {
			t.Errorf("the import's summary lacks %q:\n%s", want, out)
		}
	}

	r := apptest.Start(t, cfg, app.StartOptions{Version: "test"})
	ov, err := r.Services.Workers.List()
	if err != nil || len(ov.Workers) != 1 || ov.Workers[0].Enabled || ov.Workers[0].Command != script {
		t.Fatalf("workers after import and start: %+v, %v; want deployer-bot disabled", ov.Workers, err)
	}
	if d, err := r.Services.Tasks.Get(craftedTaskID); err != nil || d.Task.Status != relay.StatusQueued {
		t.Fatalf("the crafted task: %+v %v; want it still queued", d.Task.Status, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the crafted worker's program ran at start (%v)", err)
	}

	// The operator enables it: only now does it run.
	cfgW := ov.Workers[0].WorkerConfig
	cfgW.Enabled = true
	if _, err := r.Services.Workers.Save(cfgW); err != nil {
		t.Fatalf("enable: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the enabled worker never ran its program")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
