package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure `import-upstream` names the agents the imported open tasks are
// for, with how many each, and says that a worker enabled for one runs
// them as sent (the operator's name included): a crafted file's queued
// task "from the operator" would otherwise run unattended once the
// operator enables a worker, with nothing said. The counts are the
// fixture's queued and claimed tasks.
func TestImportNamesOpenTasks(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	noErr(t, os.MkdirAll(dir, 0o700))
	b, err := os.ReadFile(upstreamFixture)
	noErr(t, err)
	noErr(t, os.WriteFile(filepath.Join(dir, "relay.db"), b, 0o600))
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(upstreamFixture), "expected.json"))
	noErr(t, err)
	var want struct {
		Tasks []struct{ Status, Recipient string }
	}
	noErr(t, json.Unmarshal(raw, &want))
	open := map[string]int{}
	for _, task := range want.Tasks {
		if task.Status == "queued" || task.Status == "claimed" {
			open[task.Recipient]++
		}
	}
	if len(open) == 0 {
		t.Fatal("the fixture has no open task")
	}
	o, errs, code := run(t, "import-upstream", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("import: %d %s %s", code, o, errs)
	}
	for slug, n := range open {
		if !strings.Contains(o, fmt.Sprintf("%s (%d)", slug, n)) {
			t.Errorf("the summary does not name %s's %d open tasks:\n%s", slug, n, o)
		}
	}
	if !strings.Contains(o, "operator's name") || !strings.Contains(o, "cancel those you did not send") {
		t.Errorf("the summary does not say the open tasks run once a worker is enabled:\n%s", o)
	}
}
