package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/procstat"
)

// stopBeforeStartEnv makes a sandbox child started with Verb stop itself
// (SIGTERM, as the worker's stop of the run's group) just before it starts
// the CLI, once the signal reached it. Set as a package variable, not in
// an init function: Verb runs in this package's init.
const stopBeforeStartEnv = "CCR_STOP_BEFORE_START"

var _ = func() bool {
	if os.Getenv(stopBeforeStartEnv) == "1" {
		beforeStart = func(r *reaper) {
			_ = unix.Kill(os.Getpid(), unix.SIGTERM)
			for deadline := time.Now().Add(30 * time.Second); len(r.stop) == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
	}
	return true
}()

// Ensure a cleanup that cannot list the processes (no /proc, or one that
// does not show this process) says so at once, instead of waiting and then
// reporting processes that "did not end after SIGKILL" though none was
// sent.
func TestCleanupWithoutProc(t *testing.T) {
	defer func(d string) { procDir = d }(procDir)
	procDir = filepath.Join(t.TempDir(), "no-proc")
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	var said strings.Builder
	r := &reaper{self: os.Getpid(), cli: -1, stderr: &said}
	r.cleanup()
	if got := said.String(); !strings.Contains(got, "cannot be listed") || strings.Contains(got, "SIGKILL") {
		t.Fatalf("said %q", got)
	}
}

// Ensure a stopping run's sweep of the processes outside the run's group
// and the CLI's still spares the group of a setsid'd CLI that has exited
// but is not reaped yet (a zombie): its processes get the CLI's grace
// (SIGTERM first), not SIGKILL at once.
func TestSweepSparesZombieCLIGroup(t *testing.T) {
	// This process adopts the CLI's orphan, as the sandbox child does.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skip("no subreapers:", err)
	}
	defer func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) }()
	cli := exec.Command("/bin/sh", "-c", "sleep 60 & echo $!")
	cli.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	member, err2 := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || err2 != nil {
		t.Fatalf("the CLI's group member: %q, %v, %v", line, err, err2)
	}
	defer func() {
		_ = unix.Kill(member, unix.SIGKILL)
		_, _ = unix.Wait4(member, nil, 0, nil)
		_ = cli.Wait()
	}()
	poll.Until(t, "the CLI to exit (a zombie)", 10*time.Second, func() bool {
		p, ok := procstat.Read(procDir, cli.Process.Pid)
		return ok && p.Zombie()
	})
	r := &reaper{self: os.Getpid(), pgid: unix.Getpgrp(), cli: cli.Process.Pid, stderr: os.Stderr}
	if _, ok := r.signalTree(unix.SIGKILL, true); !ok {
		t.Fatal("the processes were not listed")
	}
	for id := range r.sent[unix.SIGKILL] {
		if id.pid == member {
			t.Fatalf("the process %d of the CLI's group was sent SIGKILL", member)
		}
	}
}
