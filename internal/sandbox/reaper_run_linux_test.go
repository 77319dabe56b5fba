package sandbox_test

import (
	"errors"
	"fmt"
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
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a process a sandboxed run started in a session of its own (setsid,
// out of the run's process group) does not outlive the run: when the CLI
// exits, when the run is stopped as the worker stops it (SIGTERM to the
// group) while the CLI and that process both run, and when the CLI takes
// its grace after SIGTERM (the process outside the group is gone before
// the CLI ends). The run ends as the CLI did. Before the sandbox child
// reaped the run's tree, the process lived on for its 5 minutes.
func TestSetsidProcessEndsWithRun(t *testing.T) {
	tests := []struct {
		name, then string
		stop       bool
		// want is how the run ends: "exit 0" or "signal terminated".
		want string
	}{
		{"the CLI exits", "exit", false, "exit 0"},
		{"the run is stopped", "wait", true, "signal terminated"},
		{"the run is stopped, the CLI takes its grace", "graceful", true, "exit 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startReaperRun(t, "cli", "CCR_CLI_THEN="+tt.then)
			daemon := r.pid(t, r.daemonPid)
			if !running(daemon) {
				t.Fatalf("the daemon %d does not run", daemon)
			}
			// The CLI exits only once the daemon was seen running.
			writeTestFile(t, r.cliGo, "")
			if tt.stop {
				cli := r.pid(t, r.cliPid)
				if !running(cli) {
					t.Fatalf("the CLI %d does not run", cli)
				}
				if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			err := r.cmd.Wait()
			if got := endedBy(err); got != tt.want {
				t.Errorf("the run ended by %q, want %q", got, tt.want)
			}
			poll.Until(t, fmt.Sprintf("the setsid process %d to end", daemon), 10*time.Second, func() bool { return !running(daemon) })
			if tt.then == "graceful" {
				if note, _ := os.ReadFile(r.cliNote); string(note) != "daemon gone before the CLI ended: true" {
					t.Errorf("the CLI noted %q", note)
				}
			}
		})
	}
}

// endedBy says how a command ended from its Wait error: "exit N" or
// "signal NAME".
func endedBy(err error) string {
	if err == nil {
		return "exit 0"
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return err.Error()
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return "exit " + strconv.Itoa(exit.ExitCode())
}

// Ensure processes that keep forking in sessions of their own while the
// run ends (each kill leaves children to the sandbox child) are all gone
// after the run: the sandbox child kills until none is left. The CLI ends
// only once the loops have started forking.
func TestForkingProcessesEndWithRun(t *testing.T) {
	mark := "ccr-fork-" + strconv.Itoa(os.Getpid())
	// Three setsid'd loops each start up to 100 sleeping shells, all with
	// the mark in their command line; the CLI ends while they fork, once
	// the test saw minMarked of them and wrote the file "go".
	const minMarked = 30
	loop := `: ` + mark + `; i=0; while [ $i -lt 100 ]; do sh -c ': ` + mark + `; sleep 30' & i=$((i+1)); done; wait`
	script := `for n in 1 2 3; do setsid sh -c "$LOOP" >/dev/null 2>&1 & done; while [ ! -e go ]; do sleep 0.02; done`
	cmd, work := sandboxedCmd(t, "/bin/sh", []string{"-c", script}, "LOOP="+loop)
	marked := func() (pids []int) {
		names, _ := os.ReadDir("/proc")
		for _, n := range names {
			pid, err := strconv.Atoi(n.Name())
			if b, _ := os.ReadFile("/proc/" + n.Name() + "/cmdline"); err == nil && strings.Contains(string(b), mark) && running(pid) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range marked() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	poll.Until(t, fmt.Sprintf("%d forked processes", minMarked), 30*time.Second, func() bool { return len(marked()) >= minMarked })
	writeTestFile(t, filepath.Join(work, "go"), "")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	poll.Until(t, "the forking processes to end", 10*time.Second, func() bool { return len(marked()) == 0 },
		func() string { return fmt.Sprintf("left: %v", marked()) })
}

// Ensure a stopped run's CLI gets the stop signal once and keeps its grace
// (to write its transcript), whether it stays in the run's process group
// or leaves it (setsid, or a wrapper that does), and that a CLI out of the
// group that ignores SIGTERM is killed by the sandbox child once the
// child's grace (a little shorter than the worker's) is over, though the
// worker's SIGKILL to the group (which would end the child and leave that
// CLI to init) never comes here.
func TestStoppedCLIGrace(t *testing.T) {
	tests := []struct {
		name, group, then string
		// want is how the run ends; note what the CLI wrote ("" for nothing).
		want, note string
	}{
		{"in the group, graceful", "same", "graceful", "exit 0", "SIGTERMs: 1"},
		{"out of the group, graceful", "setsid", "graceful", "exit 0", "SIGTERMs: 1"},
		{"out of the group, deaf", "setsid", "deaf", "signal killed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startReaperRun(t, "group-cli", "CCR_CLI_GROUP="+tt.group, "CCR_CLI_THEN="+tt.then)
			cli := r.pid(t, r.cliPid)
			// The worker's stop: SIGTERM to the run's group.
			if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if got := endedBy(r.cmd.Wait()); got != tt.want {
				t.Errorf("the run ended by %q, want %q", got, tt.want)
			}
			if note, _ := os.ReadFile(r.cliNote); string(note) != tt.note {
				t.Errorf("the CLI noted %q, want %q", note, tt.note)
			}
			if running(cli) {
				t.Errorf("the CLI %d outlived the run", cli)
			}
		})
	}
}

// Ensure the processes a CLI leaves when it exits by itself (an MCP server
// in its process group) get SIGTERM, and a grace to end cleanly, before
// the sandbox child kills what is left.
func TestLeftoversGetSIGTERM(t *testing.T) {
	server := `trap 'echo ended > termed; exit 0' TERM; : > ready; while :; do sleep 0.05; done`
	script := `sh -c "$SERVER" & while [ ! -e ready ]; do sleep 0.02; done`
	cmd, work := sandboxedCmd(t, "/bin/sh", []string{"-c", script}, "SERVER="+server)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "termed")); string(b) != "ended\n" {
		t.Fatalf("the leftover did not end by its SIGTERM trap: %q, %v", b, err)
	}
}

// Ensure a CLI that makes the sandbox child its tracer (PTRACE_TRACEME)
// and stops for it (a signal) is let go with its signal, not taken as
// ended (and killed with its tree).
func TestTracedCLIIsLetGo(t *testing.T) {
	self := landlockSelf(t)
	cmd, _ := sandboxedCmd(t, self, nil, reaperHelper+"=traceme")
	out, err := cmd.CombinedOutput()
	if strings.HasPrefix(string(out), "traceme:") {
		t.Skipf("the CLI cannot be traced here: %s", out)
	}
	if got := endedBy(err); got != "exit 0" || !strings.Contains(string(out), "got SIGUSR1") {
		t.Fatalf("ended by %q: %s", got, out)
	}
}

// Ensure a stop that comes before the CLI is started (the worker's SIGTERM
// to the run's group, which then holds only the sandbox child) does not
// leave the CLI to run without it: the CLI is not started, and the run
// ends by the stop signal.
func TestStopBeforeCLIStarts(t *testing.T) {
	cmd, work := sandboxedCmd(t, "/bin/sh", []string{"-c", ": > started; sleep 30"}, "CCR_STOP_BEFORE_START=1")
	out, err := cmd.CombinedOutput()
	if got := endedBy(err); got != "signal terminated" {
		t.Errorf("ended by %q, want signal terminated: %s", got, out)
	}
	if _, err := os.Stat(filepath.Join(work, "started")); err == nil {
		t.Error("the CLI started")
	}
}

// Ensure a sandboxed run ends as its CLI did: the CLI's exit code, or the
// signal that killed it (the worker labels a run "killed" by that), also a
// signal the Go runtime handles itself (SIGSEGV, SIGSYS of the seccomp
// filter, SIGPIPE); a program that cannot be started is still 127.
func TestReaperMirrorsExit(t *testing.T) {
	tests := []struct {
		name    string
		program string
		args    []string
		want    string
	}{
		{"exit code", "/bin/sh", []string{"-c", "exit 7"}, "exit 7"},
		{"exit 0", "/bin/sh", []string{"-c", "true"}, "exit 0"},
		{"SIGTERM", "/bin/sh", []string{"-c", "kill -TERM $$"}, "signal terminated"},
		{"SIGKILL", "/bin/sh", []string{"-c", "kill -KILL $$"}, "signal killed"},
		{"SIGINT", "/bin/sh", []string{"-c", "kill -INT $$"}, "signal interrupt"},
		{"SIGSEGV", "/bin/sh", []string{"-c", "ulimit -c 0; kill -SEGV $$"}, "signal segmentation fault"},
		{"SIGSYS", "/bin/sh", []string{"-c", "ulimit -c 0; kill -SYS $$"}, "signal bad system call"},
		{"SIGPIPE", "/bin/sh", []string{"-c", "kill -PIPE $$"}, "signal broken pipe"},
		{"not found", "/no/such/program", nil, "exit 127"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, _ := sandboxedCmd(t, tt.program, tt.args)
			out, err := cmd.CombinedOutput()
			if got := endedBy(err); got != tt.want {
				t.Errorf("ended by %q, want %q; output: %s", got, tt.want, out)
			}
			if strings.Contains(string(out), "goroutine ") {
				t.Errorf("the sandbox child printed a Go crash report: %s", out)
			}
		})
	}
}

// attackC is attackParentMain's first part in C, for a CLI that starts
// in microseconds: it prints "parent VERB", tries to signal (signal 0) and
// ptrace (PTRACE_SEIZE) each thread of its parent, 2000 times over, and
// prints "signal TID" or "ptrace TID" for each success, then "attempts N".
const attackC = `#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
	pid_t pp = getppid();
	char path[64];
	char cmdline[4096] = {0};
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pp);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(cmdline, 1, sizeof cmdline - 1, f) : 0;
	if (f) fclose(f);
	size_t first = strlen(cmdline);
	printf("parent %s\n", first + 1 < n ? cmdline + first + 1 : "");
	snprintf(path, sizeof path, "/proc/%d/task", (int)pp);
	long attempts = 0;
	for (int i = 0; i < 2000; i++) {
		DIR *d = opendir(path);
		if (!d) { perror("opendir"); return 1; }
		struct dirent *e;
		while ((e = readdir(d))) {
			int tid = atoi(e->d_name);
			if (tid <= 0) continue;
			attempts++;
			if (syscall(SYS_tgkill, pp, tid, 0) == 0) printf("signal %d\n", tid);
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) == 0) printf("ptrace %d\n", tid);
		}
		closedir(d);
	}
	printf("attempts %ld\n", attempts);
	return 0;
}
`

// Ensure a sandboxed run cannot change the resource limits, scheduling,
// affinity, nice value or I/O priority of the sandbox child that
// supervises it (Landlock guards none of them at any ABI): with its limit
// on open files lowered to 0 the child could not list the run's
// processes, and a setsid'd daemon would outlive the run; with SCHED_IDLE
// it would starve, with a CPU limit of 1 s the kernel would kill it. The
// daemon still ends with the run, reading the child's limits still works,
// and the run still changes its own (pid 0).
func TestRunCannotChangeItsReaper(t *testing.T) {
	if !sandbox.Seccomp() {
		t.Skip("this kernel has no seccomp filter")
	}
	r := startReaperRun(t, "limit-parent", "CCR_CLI_THEN=exit")
	daemon := r.pid(t, r.daemonPid)
	writeTestFile(t, r.cliGo, "")
	if got := endedBy(r.cmd.Wait()); got != "exit 0" {
		t.Errorf("the run ended by %q, want exit 0", got)
	}
	poll.Until(t, fmt.Sprintf("the setsid process %d to end", daemon), 10*time.Second, func() bool { return !running(daemon) })
	b, err := os.ReadFile(r.cliNote)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		got[k] = v
	}
	// SCHED_OTHER (here with SCHED_RESET_ON_FORK, as Claude Code sets it
	// on its threads) starves nothing, and stays allowed; the helper does
	// not try it when the sandbox child (like this test, under chrt -i 0)
	// has SCHED_IDLE, which the kernel keeps without RLIMIT_NICE.
	other := "ok"
	if policy, _, e := unix.Syscall(unix.SYS_SCHED_GETSCHEDULER, 0, 0, 0); e == 0 && policy&^unix.SCHED_RESET_ON_FORK == unix.SCHED_IDLE {
		other = "skipped"
	}
	want := map[string]string{"parent": sandbox.Verb, "prlimit-parent-read": "ok", "sched_setscheduler-parent-other": other}
	for _, k := range []string{"prlimit-parent-nofile", "prlimit-parent-cpu", "sched_setscheduler-parent", "sched_setparam-parent",
		"sched_setattr-parent", "sched_setaffinity-parent", "setpriority-parent", "setpriority-group", "ioprio_set-parent"} {
		want[k] = unix.EPERM.Error()
	}
	for _, k := range []string{"setrlimit-self", "sched_setscheduler-self", "sched_setaffinity-self", "setpriority-self", "ioprio_set-self"} {
		want[k] = "ok"
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q\n%s", k, got[k], v, b)
		}
	}
}

// Ensure a sandboxed run can neither signal nor ptrace the sandbox child
// that supervises it (to kill it and leave its processes to init, or to
// take it over, unconfined): no thread of that process is ever in the
// run's Landlock domain or has its seccomp filter, from the CLI's very
// first instructions on. (The child once confined a thread of its own,
// which ended only after the CLI started: a CLI in C reached it in about
// one run of four.) Signals are scoped from Landlock ABI 6, ptrace from
// ABI 1. The CLI is this test binary (attackParentMain) and, where a C
// compiler is installed, attackC.
func TestRunCannotReachItsReaper(t *testing.T) {
	self := landlockSelf(t)
	type attacker struct {
		name    string
		program string
		env     []string
		runs    int
	}
	attackers := []attacker{{"go", self, []string{reaperHelper + "=attack-parent"}, 3}}
	if cc, err := exec.LookPath("cc"); err == nil {
		dir := t.TempDir()
		src, bin := filepath.Join(dir, "attack.c"), filepath.Join(dir, "attack")
		writeTestFile(t, src, attackC)
		if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("cc: %v: %s", err, out)
		}
		attackers = append(attackers, attacker{"c", bin, nil, 12})
	} else {
		t.Log("no C compiler: the attack runs in Go only")
	}
	own, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	base := "CCR_BASE_STATUS=" + confinementOf(string(own))
	for _, a := range attackers {
		t.Run(a.name, func(t *testing.T) {
			for i := range a.runs {
				cmd, _ := sandboxedCmd(t, a.program, nil, append(a.env, base)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				text := string(out)
				// The attacker's parent is the sandbox child (not this test,
				// as on a kernel without subreapers), it tried, and it is
				// confined itself.
				if !strings.Contains(text, "parent "+sandbox.Verb+"\n") {
					t.Fatalf("run %d: the attacking CLI's parent is not the sandbox child:\n%s", i, text)
				}
				if _, n, _ := strings.Cut(text, "attempts "); strings.HasPrefix(n, "0\n") || n == "" {
					t.Fatalf("run %d: the attacking CLI did not try:\n%s", i, text)
				}
				if a.name == "go" && !strings.Contains(text, "self seccomp 2\n") {
					t.Fatalf("run %d: the attacking CLI is not confined:\n%s", i, text)
				}
				for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
					if strings.HasPrefix(l, "ptrace ") || strings.HasPrefix(l, "confined ") ||
						sandbox.ABI() >= 6 && (strings.HasPrefix(l, "signal ") || l == "process: ok") {
						t.Fatalf("run %d: the run reached a thread of its sandbox child: %s", i, l)
					}
				}
			}
		})
	}
}
