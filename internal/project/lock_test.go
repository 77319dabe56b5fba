package project

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/filelock"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// lockHelperEnv names the store folder of a helper process of the lock's
// tests; with lockHoldEnv set, the helper holds the lock until killed.
const (
	lockHelperEnv = "CCR_PROJECT_LOCK_HELPER"
	lockHoldEnv   = "CCR_PROJECT_LOCK_HOLD"
)

// TestLockHelper takes the store's lock once the file "go" appears, holds
// it a moment, and prints "overlap" if another holder was there; or, told
// to hold it, prints "holding" and waits to be killed.
func TestLockHelper(t *testing.T) {
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("ready-%d", os.Getpid())), nil, 0o600)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("no go")
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
	unlock, err := Open(dir).lock()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if os.Getenv(lockHoldEnv) != "" {
		fmt.Println("holding")
		select {}
	}
	f, err := os.OpenFile(filepath.Join(dir, "holder"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Println("overlap")
	} else {
		_ = f.Close()
		time.Sleep(50 * time.Millisecond)
		_ = os.Remove(filepath.Join(dir, "holder"))
	}
	unlock()
	fmt.Println("done")
	os.Exit(0)
}

// Ensure commands (real processes) that change the store at the same
// moment take its lock one at a time, and that a folder an older version
// left as its lock does not stand in the way.
func TestLockOneHolderAtATime(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		if round == 0 {
			if err := os.Mkdir(filepath.Join(dir, StoreFile+".lock"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		const waiters = 8
		outs := make([]string, waiters)
		var wg sync.WaitGroup
		cmds := make([]*exec.Cmd, waiters)
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^TestLockHelper$")
			cmds[i].Env = append(os.Environ(), lockHelperEnv+"="+dir)
		}
		for i, c := range cmds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, _ := c.CombinedOutput()
				outs[i] = string(b)
			}()
		}
		// All wait for "go", so they ask for the lock together.
		poll.Until(t, "all helpers started", 20*time.Second, func() bool {
			m, _ := filepath.Glob(filepath.Join(dir, "ready-*"))
			return len(m) == waiters
		})
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, out := range outs {
			if strings.Contains(out, "overlap") || !strings.Contains(out, "done") {
				t.Fatalf("round %d, waiter %d: %s", round, i, out)
			}
		}
	}
}

// Ensure a command killed while it holds the lock (as a session's start
// hook killed at its timeout, or Ctrl-C) leaves nothing that makes the
// next wait: the system frees a dead process's lock. Before, the lock was a
// folder such a command left, and the next change waited 40 s and failed.
func TestLockOfAKilledCommandIsFree(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := testkit.StartHelper(t, "TestLockHelper", []string{lockHelperEnv + "=" + dir, lockHoldEnv + "=1"}, "holding")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	done := make(chan error, 1)
	go func() {
		done <- Open(dir).Update(func(ps []Project) ([]Project, bool, error) {
			return append(ps, Project{ID: "after", Dir: filepath.Join(dir, "after")}), true, nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Update after the holder was killed: %v", err)
		}
	case <-time.After(lockWait / 2):
		// Windows may free a dead process's lock a moment after it ends,
		// never anywhere near the lock's whole wait.
		t.Fatalf("Update after the holder was killed still waits after %s", lockWait/2)
	}
	if _, ok, err := Open(dir).Get("after"); !ok || err != nil {
		t.Fatalf("the change after the killed holder is not stored: %v %v", ok, err)
	}
}

// Ensure a change that waits for another command's lock says so once, after
// a second, naming the lock (register waited silently while another asked
// a slow relay), and not when the lock is free.
func TestLockWaitIsSaid(t *testing.T) {
	dir := t.TempDir()
	held, err := filelock.Lock(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	s := Open(dir)
	s.SetWaiting(func(lock string) { said = append(said, lock) })
	go func() {
		time.Sleep(1500 * time.Millisecond)
		held.Unlock()
	}()
	unlock, err := s.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if len(said) != 1 || said[0] != filepath.Join(dir, LockFile) {
		t.Fatalf("said %q while waiting 1.5 s, want the lock once", said)
	}
	said = nil
	unlock, err = s.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if len(said) != 0 {
		t.Fatalf("said %q with the lock free", said)
	}
}
