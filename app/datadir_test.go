package app

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// Ensure a data folder that is not the relay's own is refused before the
// relay makes it owner-only: a filesystem root, the home folder (also
// through a symlink), or a folder holding the user's other files, whose
// permissions stay as they were.
func TestDataDirOfOtherFilesIsRefusedNotChmodded(t *testing.T) {
	home := t.TempDir()
	link := filepath.Join(t.TempDir(), "home-link")
	symlinkSkip := ""
	switch err := os.Symlink(home, link); {
	case err != nil && runtime.GOOS == "windows":
		symlinkSkip = "Windows refused to make a symlink (it needs Developer Mode or an administrator): " + err.Error()
	case err != nil:
		t.Fatal(err)
	case os.Getenv("CROSSCHAT_UNDER_WINE") != "":
		symlinkSkip = "under wine 8.0 a symlink made by os.Symlink cannot be opened (GetFileAttributesEx: file not found)"
	}
	project := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	used := t.TempDir()
	for _, n := range []string{config.DatabaseFile, "notes.txt"} {
		if err := os.WriteFile(filepath.Join(used, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ownOnly := t.TempDir()
	for _, n := range []string{"crosschat-relay.log", config.TokenFile, "runs", "mediakeys", "localstorage"} {
		if err := os.WriteFile(filepath.Join(ownOnly, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, dir, want string
	}{
		{"root", "/", "root of a filesystem"},
		{"home", home, "home folder"},
		{"home through a symlink", link, "home folder"},
		{"a folder of other files", project, "already holds other files (notes.txt)"},
		{"a file", filepath.Join(project, "notes.txt"), "is a file"},
		{"new", filepath.Join(t.TempDir(), "data"), ""},
		{"empty", t.TempDir(), ""},
		{"only the relay's and its web view's files", ownOnly, ""},
		{"already the relay's", used, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dir == link && symlinkSkip != "" {
				t.Skip(symlinkSkip)
			}
			err := checkDataDir(tc.dir, home)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}

	// Through Start: refused, and the folder keeps its permissions.
	cfg := config.Config{Host: "127.0.0.1", DataDir: project, OperatorSlug: "operator", TaskRetentionDays: 30}
	if r, err := Start(cfg, StartOptions{Version: "test"}); err == nil {
		r.Shutdown(t.Context())
		t.Fatal("Start accepted a folder of other files as its data folder")
	}
	st, err := os.Stat(project)
	if err != nil {
		t.Fatal(err)
	}
	// Windows has no Unix permission bits to compare (Go reports 0777).
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o755 {
		t.Fatalf("the refused folder is now %v", st.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(project, config.TokenFile)); !os.IsNotExist(err) {
		t.Fatalf("the refused folder got an admin token: %v", err)
	}
}

// Ensure a relay refused while another starts does not name the pid and
// address of a relay killed before, from the run file that one left: the
// new holder removes it as it takes the lock (its own run file comes once
// it serves). Before, the refusal named the dead relay's pid, which
// another process may have taken since (a hostile review).
func TestDataDirLockDropsAStaleRunFile(t *testing.T) {
	dir := t.TempDir()
	const deadPID = 1 << 30 // above Linux's pid_max: no process has it
	if err := writeRunFile(dir, RunInfo{PID: deadPID, URL: "http://localhost:1", DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	held, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	if _, ok, err := ReadRunFile(dir); ok || err != nil {
		t.Errorf("the stale run file is still there once the lock is taken (%v)", err)
	}
	_, err = lockDataDir(dir)
	if err == nil {
		t.Fatal("a second lock succeeded")
	}
	if strings.Contains(err.Error(), "1073741824") || strings.Contains(err.Error(), "localhost:1") {
		t.Errorf("the refusal names the dead relay: %v", err)
	}
	if !strings.Contains(err.Error(), "another relay is already serving the data folder") {
		t.Errorf("the refusal does not say what holds the folder: %v", err)
	}
}
