//go:build unix

package plantguard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Ensure a FIFO put in place of a kept file or folder (by a process of
// another run that may write the folder, between the look and the open)
// is never waited on: reading a kept file and listing a kept folder fail
// at once instead of blocking the worker forever.
func TestFIFONeverWaitedOn(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"fifo-file", "fifo-dir"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := readRegular(root, "fifo-file", 10); err == nil {
			t.Error("a FIFO was read as a file")
		}
		w := walker{root: root}
		if _, err := w.list("fifo-dir"); err == nil {
			t.Error("a FIFO was listed as a folder")
		}
		u := undoer{root: root}
		_ = u.find("fifo-dir", "x", fileID{1, 1})
		_ = u.remove("fifo-dir")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waited on a FIFO")
	}
}
