package plantguard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Ensure a folder crowded past the walk's bound (a run that fills a
// subfolder to hide what it plants) still has its own settings checked:
// the walk goes in breadth, so what is left unchecked is the deepest, and
// Restore says the check was partial.
func TestCrowdedFolderStillChecksItsTop(t *testing.T) {
	defer func(n int) { maxWalked = n }(maxWalked)
	maxWalked = 50
	dir := t.TempDir()
	for i := range 200 {
		p := filepath.Join(dir, "a-crowd", "d"+strconv.Itoa(i/20), "f"+strconv.Itoa(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Past the crowd in a depth-first walk (a-crowd before z).
	if err := os.WriteFile(filepath.Join(dir, "z", ".mcp.json"), []byte(`{"mcpServers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	undone, partial, err := s.Restore()
	if err != nil || !partial || len(undone) != 1 || !strings.HasSuffix(undone[0].Path, ".mcp.json") {
		t.Fatalf("undone %v, partial %v, %v", undone, partial, err)
	}
}
