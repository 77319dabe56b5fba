package filelock_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/filelock"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// holderEnv names the lock file of a helper process of TestKilledHolder.
const holderEnv = "CCR_FILELOCK_HOLDER"

// TestHolderHelper locks the file holderEnv names, says "locked" and holds
// the lock until it is killed.
func TestHolderHelper(t *testing.T) {
	path := os.Getenv(holderEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	if _, err := filelock.Lock(path); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("locked")
	select {}
}

// Ensure a second Lock of a locked file fails at once with ErrLocked, in
// this process too, and succeeds once the first is unlocked; Unlock twice
// is harmless and the file stays.
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	first, err := filelock.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := filelock.Lock(path); !errors.Is(err, filelock.ErrLocked) {
		if l != nil {
			l.Unlock()
		}
		t.Fatalf("second Lock of a locked file = %v, want ErrLocked", err)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the lock file went with Unlock: %v", err)
	}
	again, err := filelock.Lock(path)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := again.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := filelock.Lock(filepath.Join(t.TempDir(), "missing", "x.lock")); err == nil || errors.Is(err, filelock.ErrLocked) {
		t.Fatalf("Lock in a missing folder = %v, want an error other than ErrLocked", err)
	}
}

// Ensure a lock held by another process refuses this one, and that the
// process killed (SIGKILL on Unix), its lock is free with nothing cleaned up.
func TestKilledHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := testkit.StartHelper(t, "TestHolderHelper", []string{holderEnv + "=" + path}, "locked")
	if l, err := filelock.Lock(path); !errors.Is(err, filelock.ErrLocked) {
		if l != nil {
			l.Unlock()
		}
		t.Fatalf("Lock while another process holds it = %v, want ErrLocked", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Windows may release a dead process's locks a moment after it ends.
	var (
		l   *filelock.File
		err error
	)
	poll.Until(t, "the killed holder's lock to be free", 20*time.Second, func() bool {
		l, err = filelock.Lock(path)
		return err == nil
	}, func() string { return fmt.Sprint(err) })
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}
