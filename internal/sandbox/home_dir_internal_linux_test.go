package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Ensure opening a folder of a CLI home never blocks on what a process
// left from a run swapped in for it (renameat2 RENAME_EXCHANGE after the
// type was checked): a FIFO (an open would wait for a writer, hanging
// the relay's preparation of the next run, beyond its cancellation) or a
// link fails at once. Opened plainly (os.Root.OpenRoot), the FIFO blocks,
// so the test can fail.
func TestHomeSubFolderNeverBlocks(t *testing.T) {
	home := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(home, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	d, err := openDir(home)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for name, want := range map[string]error{"fifo": unix.ENOTDIR, "link": unix.ENOTDIR} {
		done := make(chan error, 1)
		go func() {
			c, err := d.sub(name)
			if err == nil {
				c.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, want) && !errors.Is(err, unix.ELOOP) {
				t.Errorf("opening the %s: %v, want %v", name, err, want)
			}
		case <-time.After(10 * time.Second):
			// Unblock it, so the test ends.
			if f, err := os.OpenFile(filepath.Join(home, name), os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("opening the %s blocks", name)
		}
	}
}

// Ensure moving a home aside never replaces a home moved aside before
// (one a relay started again under the same process id may have named
// alike, which rename would fail on, not empty): another name is tried.
// Trying one name only, the move fails, so the test can fail.
func TestHomeMoveAsideTakesAFreeName(t *testing.T) {
	parent := t.TempDir()
	for _, rel := range []string{"gemini/.gemini/s", ".crosschat-old-gemini-taken/stuck/f"} {
		p := filepath.Join(parent, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"taken", "free"}
	defer func(f func() string) { asideSuffix = f }(asideSuffix)
	asideSuffix = func() string { n := names[0]; names = names[1:]; return n }
	d, err := openDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	old, err := moveAside(d, "gemini")
	if err != nil || old != ".crosschat-old-gemini-free" {
		t.Fatalf("moved aside as %q, %v; want .crosschat-old-gemini-free", old, err)
	}
	for _, rel := range []string{".crosschat-old-gemini-taken/stuck/f", ".crosschat-old-gemini-free/.gemini/s"} {
		if _, err := os.Stat(filepath.Join(parent, rel)); err != nil {
			t.Error(err)
		}
	}
}

// Ensure the removal of what a run left is bounded as a whole: past its
// budget it stops with errBudget, having read no more entries than that.
// Unbounded, every entry is removed, so the test can fail.
func TestHomeRemovalBounded(t *testing.T) {
	parent := t.TempDir()
	for i := range 200 {
		p := filepath.Join(parent, "old", "d"+strconv.Itoa(i%4), "f"+strconv.Itoa(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := openDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := &budget{left: 50, deadline: time.Now().Add(time.Hour)}
	if err := d.removeAll("old", b); !errors.Is(err, errBudget) {
		t.Fatalf("removing past the budget: %v, want %v", err, errBudget)
	}
	left := 0
	_ = filepath.WalkDir(filepath.Join(parent, "old"), func(string, os.DirEntry, error) error { left++; return nil })
	if left < 200-50 {
		t.Errorf("%d entries left, want at least %d", left, 200-50)
	}
}
