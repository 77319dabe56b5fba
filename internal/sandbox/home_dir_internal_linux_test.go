package sandbox

import (
	"errors"
	"os"
	"path/filepath"
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
