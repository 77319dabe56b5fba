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
)

// lockHelperEnv names the store folder of a helper process of
// TestStaleLockTakenOverOnce.
const lockHelperEnv = "CCR_PROJECT_LOCK_HELPER"

// TestLockHelper takes the store's lock once the file "go" appears, holds
// it a moment, and prints "overlap" if another holder was there.
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

// Ensure waiters (real processes) that all find a stale lock take it over
// one at a time: no two hold the lock together, and nothing is left.
func TestStaleLockTakenOverOnce(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		lock := filepath.Join(dir, StoreFile+".lock")
		if err := os.Mkdir(lock, 0o700); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * lockStale)
		if err := os.Chtimes(lock, old, old); err != nil {
			t.Fatal(err)
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
		// All wait for "go", so they find the stale lock together.
		deadline := time.Now().Add(20 * time.Second)
		for {
			m, _ := filepath.Glob(filepath.Join(dir, "ready-*"))
			if len(m) == waiters {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d helpers started", len(m))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, out := range outs {
			if strings.Contains(out, "overlap") || !strings.Contains(out, "done") {
				t.Fatalf("round %d, waiter %d: %s", round, i, out)
			}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), StoreFile+".lock") {
				t.Fatalf("round %d: left %s", round, e.Name())
			}
		}
	}
}
