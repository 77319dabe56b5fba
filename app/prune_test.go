package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Ensure run folders left behind (even read-only trees an agent made) are
// deleted once past retention, while fresh ones and those of running tasks
// stay.
func TestLeftoverRunFoldersArePrunedAfterRetention(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration, readOnly bool) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "out"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "out", "big.bin"), make([]byte, 1024), 0o600); err != nil {
			t.Fatal(err)
		}
		if readOnly {
			if err := os.Chmod(filepath.Join(dir, "out"), 0o500); err != nil {
				t.Fatal(err)
			}
		}
		at := now.Add(-age)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	old := mk("old", 31*24*time.Hour, true)
	fresh := mk("fresh", time.Hour, false)
	running := mk("running", 40*24*time.Hour, false)
	n, err := pruneRunFolders(root, 30*24*time.Hour, now, map[string]bool{"running": true})
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("old run folder still there: %v", err)
	}
	for _, d := range []string{fresh, running} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s went: %v", d, err)
		}
	}
	if n, err := pruneRunFolders(filepath.Join(root, "none"), time.Hour, now, nil); n != 0 || err != nil {
		t.Fatalf("missing root: %d %v", n, err)
	}
}
