package session_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/session"
)

const helperEnv = "CROSSCHAT_SESSION_LOCK_HELPER"

// TestLockHelperProcess is not a test: run as a child with helperEnv set to
// "dir session token", it takes the lock, says so and waits to be killed.
func TestLockHelperProcess(t *testing.T) {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) != 3 {
		t.Skip("helper process only")
	}
	if _, err := session.Acquire(context.Background(), args[0], args[1], args[2]); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// holdInChild starts a child process that holds the lock.
func holdInChild(t *testing.T, dir, sess, token string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir+" "+sess+" "+token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	return cmd
}

func TestLockWaitsForTheOwner(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	first, err := session.Acquire(ctx, dir, "sess-1", "tok-1")
	if err != nil {
		t.Fatal(err)
	}
	// Another session is independent.
	other, err := session.Acquire(ctx, dir, "sess-2", "tok-x")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()

	got := make(chan error, 1)
	go func() {
		l, err := session.Acquire(ctx, dir, "sess-1", "tok-2")
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	// The second waits while the first holds the lock…
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := session.Acquire(short, dir, "sess-1", "tok-3"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third acquirer got %v while the lock was held", err)
	}
	select {
	case err := <-got:
		t.Fatalf("the second acquirer did not wait: %v", err)
	default:
	}
	// …no one else can release it…
	if err := session.Release(dir, "sess-1", "tok-2"); !errors.Is(err, session.ErrNotOwner) {
		t.Fatalf("release by a non-owner = %v", err)
	}
	// …and it runs once the owner releases.
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock after release")
	}
}

func TestLockFromDeadOwnerReclaimed(t *testing.T) {
	dir := t.TempDir()
	child := holdInChild(t, dir, "sess-1", "tok-child")
	info, err := session.ReadLock(session.LockPath(dir, "sess-1"))
	if err != nil || info.PID != child.Process.Pid || info.Token != "tok-child" {
		t.Fatalf("lock file %+v, %v; want the child's pid %d", info, err, child.Process.Pid)
	}
	// While the child lives, the lock is held.
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := session.Acquire(short, dir, "sess-1", "tok-me"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquired a live owner's lock: %v", err)
	}
	// Killed, its lock is reclaimed.
	child.Process.Kill()
	child.Wait()
	ctx, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel2()
	l, err := session.Acquire(ctx, dir, "sess-1", "tok-me")
	if err != nil {
		t.Fatalf("dead owner's lock not reclaimed: %v", err)
	}
	if l.Info().PID != os.Getpid() {
		t.Fatalf("lock %+v", l.Info())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// Ensures a lock file its owner left empty (it died between creating and
// writing it) blocks only while it is new, then is reclaimed.
func TestAbandonedEmptyLockIsReclaimed(t *testing.T) {
	dir := t.TempDir()
	path := session.LockPath(dir, "sess-e")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, holder, err := session.TryAcquire(dir, "sess-e", "tok-e"); err != nil || l != nil || holder.PID != 0 {
		t.Fatalf("a fresh empty lock: %v %+v %v; want held by an unknown owner", l, holder, err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	l, _, err := session.TryAcquire(dir, "sess-e", "tok-e")
	if err != nil || l == nil {
		t.Fatalf("an old empty lock was not reclaimed: %v", err)
	}
	if info, err := session.ReadLock(path); err != nil || info.Token != "tok-e" {
		t.Fatalf("lock after reclaim: %+v %v", info, err)
	}
}
