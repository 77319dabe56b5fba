//go:build unix

package filelock_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crosschat/crosschat-relay/internal/filelock"
)

// Ensure a symbolic link in the lock file's place is not followed: a
// dangling link made Lock create its target wherever it pointed (as root,
// anywhere), and a link to a file of the user's had that file held locked
// while the folder stayed unlocked. Found by a hostile review.
func TestLockRefusesALink(t *testing.T) {
	dir := t.TempDir()
	for _, existing := range []bool{false, true} {
		target := filepath.Join(t.TempDir(), "elsewhere")
		if existing {
			if err := os.WriteFile(target, []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(dir, "x.lock")
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		l, err := filelock.Lock(link)
		if err == nil {
			l.Unlock()
			t.Fatalf("Lock of a link (target existing: %v) succeeded", existing)
		}
		if !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("the error does not say what is wrong: %v", err)
		}
		if _, serr := os.Lstat(target); !existing && serr == nil {
			t.Errorf("Lock of a dangling link created its target")
		}
		if b, _ := os.ReadFile(target); existing && string(b) != "mine" {
			t.Errorf("the link's target changed: %q", b)
		}
	}
}

// Ensure anything but a regular file in the lock file's place (a FIFO
// here) is refused, not locked.
func TestLockRefusesAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := filelock.Lock(p)
	if err == nil {
		l.Unlock()
		t.Fatal("Lock of a FIFO succeeded")
	}
	if !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("the error does not say what is wrong: %v", err)
	}
}
