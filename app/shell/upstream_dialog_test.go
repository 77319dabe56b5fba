package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Ensure the window's start on a data folder holding the upstream relay.db
// asks; no leaves the file alone with the CLI hint, yes imports it and the
// relay then starts on it.
func TestOfferImport(t *testing.T) {
	b, err := os.ReadFile("../../internal/store/testdata/upstream/relay.db")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "relay.db")
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{Host: "127.0.0.1", DataDir: dir, OperatorSlug: "operator", TaskRetentionDays: 30}
	_, startErr := app.Start(cfg, app.StartOptions{Version: "test"})
	if !store.IsUpstream(startErr) {
		t.Fatalf("start on an upstream folder: %v", startErr)
	}
	if _, err := offerImport(&fakeRuntime{}, db, "operator", errors.New("other")); err == nil || err.Error() != "other" {
		t.Fatalf("another start error must pass through: %v", err)
	}

	no := &fakeRuntime{answer: false}
	if ok, err := offerImport(no, db, "operator", startErr); ok || err == nil || !strings.Contains(err.Error(), "import-upstream") {
		t.Fatalf("declined: %v %v", ok, err)
	}
	if got, _ := os.ReadFile(db); string(got) != string(b) {
		t.Fatal("declining changed the file")
	}

	yes := &fakeRuntime{answer: true}
	if ok, err := offerImport(yes, db, "operator", startErr); !ok || err != nil || len(yes.infos) != 1 || !strings.Contains(yes.infos[0], "14 tasks") {
		t.Fatalf("accepted: %v %v %q", ok, err, yes.infos)
	}
	// The window lists the imported worker, disabled, with what it runs,
	// and the agents whose upstream token did not come along.
	for _, want := range []string{"No token came along", "builder-codex, deployer-bot, researcher-gemini, tester-opencode", "Issue token",
		"DISABLED", "deployer-bot", "/home/dev/fixture-work/bin/fixture-worker.sh", `"--checklist" "deploy-checklist.md"`, "/home/dev/fixture-work/deploy"} {
		if !strings.Contains(yes.infos[0], want) {
			t.Errorf("the import's message lacks %q:\n%s", want, yes.infos[0])
		}
	}
	r, err := app.Start(cfg, app.StartOptions{Version: "test"})
	if err != nil {
		t.Fatalf("start after import: %v", err)
	}
	defer r.Shutdown(t.Context())
	if tasks, err := r.Services.Tasks.List(relayFilterAll()); err != nil || len(tasks) != 14 {
		t.Fatalf("tasks after import: %d %v", len(tasks), err)
	}
}

func relayFilterAll() relay.TaskFilter { return relay.TaskFilter{Limit: 500} }
