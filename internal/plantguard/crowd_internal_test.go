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

// Ensure a folder crowded past the walk's bound (left so by an earlier
// run) still has its own repository kept: a run's core.fsmonitor is
// undone. Before, the walk took the folder's entries in the order the
// folder lists them and stopped where the bound fell, before its .git
// but for one time in a hundred here.
func TestCrowdedTopStillChecksItsGit(t *testing.T) {
	defer func(n int) { maxWalked = n }(maxWalked)
	maxWalked = 20
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".git", "config")
	writeFile(t, cfg, "[core]\n\trepositoryformatversion = 0\n")
	for i := range 2000 {
		writeFile(t, filepath.Join(dir, ".a"+strconv.Itoa(i)), "")
	}
	s, err := Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch /tmp/pwned\n")
	undone, _, err := s.Restore()
	if err != nil || len(undone) != 1 || readFile(t, cfg) != "[core]\n\trepositoryformatversion = 0\n" {
		t.Fatalf("undone %v, %v; config:\n%s", undone, err, readFile(t, cfg))
	}
}

// Ensure what was kept is checked after the run wherever the walk stops:
// a run that crowds its folder past the bound, so the walk after it no
// longer reaches a repository kept before, has its change there undone,
// and the repository is neither taken for removed nor removed. Before,
// the walk after the run missed it: a kept .git folder it did not reach
// was "renamed" to itself and removed, with the user's history.
func TestCrowdAfterTheRunHidesNothing(t *testing.T) {
	defer func(n int) { maxWalked = n }(maxWalked)
	maxWalked = 50
	dir := t.TempDir()
	nested := filepath.Join(dir, "z", "vendor", "lib", ".git")
	writeFile(t, filepath.Join(nested, "config"), "[core]\n\tbare = false\n")
	writeFile(t, filepath.Join(nested, "objects", "ab", "cdef"), "the user's history")
	s, err := Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The run: a crowd walked before z, and fsmonitor in the nested one.
	for i := range 100 {
		writeFile(t, filepath.Join(dir, "a", "f"+strconv.Itoa(i)), "")
	}
	writeFile(t, filepath.Join(nested, "config"), "[core]\n\tbare = false\n\tfsmonitor = touch /tmp/pwned\n")
	undone, partial, err := s.Restore()
	if err != nil || !partial {
		t.Fatalf("restore: %v (partial %v)", err, partial)
	}
	if got := readFile(t, filepath.Join(nested, "config")); got != "[core]\n\tbare = false\n" {
		t.Errorf("the nested repository's config: %q (undone %v)", got, undone)
	}
	if got := readFile(t, filepath.Join(nested, "objects", "ab", "cdef")); got != "the user's history" {
		t.Errorf("the nested repository's objects: %q (undone %v)", got, undone)
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}
