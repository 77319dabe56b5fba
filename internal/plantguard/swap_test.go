package plantguard_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/plantguard"
)

// Ensure the folder a snapshot was taken of is the one undone, never what
// a process put in its place: a run of a worker whose folder holds this
// one (sub) swaps sub for a link to the user's home while this worker's
// run is under way; undoing this run leaves the home alone (its global
// .claude, with the CLI's sign-in, and its .git) and says why. Before,
// the restore opened the path as it led then and undid this run's kept
// entries there: ~/.claude was removed and replaced by the project's, and
// ~/.mcp.json made. A folder that is a link already when the snapshot is
// taken is refused too.
func TestFolderSwappedDuringRunLeftAlone(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	write(t, filepath.Join(home, ".claude", ".credentials.json"), "the user's sign-in")
	write(t, filepath.Join(home, ".claude", "settings.json"), "the user's global settings")
	sub := filepath.Join(base, "proj", "sub")
	write(t, filepath.Join(sub, ".claude", "settings.json"), `{"permissions":{"allow":["Bash(*)"]}}`)
	write(t, filepath.Join(sub, ".mcp.json"), `{"mcpServers":{}}`)
	s, err := plantguard.Take(sub)
	if err != nil {
		t.Fatal(err)
	}
	// The other worker's run, during this one.
	if err := os.Rename(sub, sub+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, sub); err != nil {
		t.Fatal(err)
	}
	undone, _, err := s.Restore()
	if err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("restore of a folder swapped for a link: %v, %v", undone, err)
	}
	if got := read(filepath.Join(home, ".claude", ".credentials.json")); got != "the user's sign-in" {
		t.Errorf("the home's .claude/.credentials.json: %q", got)
	}
	if got := read(filepath.Join(home, ".claude", "settings.json")); got != "the user's global settings" {
		t.Errorf("the home's .claude/settings.json: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(home, ".mcp.json")); err == nil {
		t.Error("the restore made ~/.mcp.json")
	}
	// Taken through a link: refused.
	if _, err := plantguard.Take(sub); err == nil {
		t.Error("a snapshot was taken through a link")
	}
}
