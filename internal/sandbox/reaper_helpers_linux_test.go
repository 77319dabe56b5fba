package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// reaperHelper names the part this test binary plays when it is started
// again: "daemon" (a process that starts a session of its own), "cli" (a
// CLI that starts a daemon), "group-cli" (a CLI that takes its grace, or
// ignores SIGTERM, in the run's process group or out of it) or
// "attack-parent" (a CLI that tries to signal and ptrace each thread of
// the process that started it) or "limit-parent" (a CLI that tries to
// change that process's limits and priorities, then is "cli") or
// "traceme" (a CLI that asks its parent to trace it, then signals itself).
const reaperHelper = "CCR_REAPER_HELPER"

func init() {
	switch os.Getenv(reaperHelper) {
	case "daemon":
		os.Exit(daemonMain())
	case "cli":
		os.Exit(cliMain())
	case "group-cli":
		os.Exit(groupCLIMain())
	case "attack-parent":
		os.Exit(attackParentMain())
	case "limit-parent":
		os.Exit(limitParentMain())
	case "traceme":
		os.Exit(tracemeMain())
	}
}

// daemonMain leaves the run's session and process group (setsid), writes
// its pid to $CCR_DAEMON_PID and waits, deaf to the stop signals.
func daemonMain() int {
	if _, err := syscall.Setsid(); err != nil {
		fmt.Fprintln(os.Stderr, "setsid:", err)
		return 1
	}
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := writePid(os.Getenv("CCR_DAEMON_PID"), os.Getpid()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(5 * time.Minute) // the reaper kills it long before
	return 0
}

// cliMain starts a daemon, waits for its pid file, writes its own pid to
// $CCR_CLI_PID and then, by $CCR_CLI_THEN: "exit" waits for the file
// $CCR_CLI_GO and exits 0; "wait" waits (SIGTERM ends it); "graceful"
// waits for SIGTERM, then for the daemon to be gone, writes "daemon gone
// before the CLI ended: BOOL" to $CCR_CLI_NOTE and exits 0.
func cliMain() int {
	term := make(chan os.Signal, 1)
	if os.Getenv("CCR_CLI_THEN") == "graceful" {
		signal.Notify(term, syscall.SIGTERM)
	}
	daemon := exec.Command(os.Args[0])
	daemon.Env = append(os.Environ(), reaperHelper+"=daemon")
	if err := daemon.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pidFile := os.Getenv("CCR_DAEMON_PID")
	if !waitUntil(30*time.Second, func() bool { _, err := os.Stat(pidFile); return err == nil }) {
		fmt.Fprintln(os.Stderr, "the daemon wrote no pid file")
		return 1
	}
	// The daemon's parent goes on without waiting for it: the daemon is
	// an orphan once the CLI ends.
	if err := writePid(os.Getenv("CCR_CLI_PID"), os.Getpid()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch os.Getenv("CCR_CLI_THEN") {
	case "exit":
		if !waitUntil(30*time.Second, func() bool { _, err := os.Stat(os.Getenv("CCR_CLI_GO")); return err == nil }) {
			fmt.Fprintln(os.Stderr, "no go file")
			return 1
		}
	case "wait":
		time.Sleep(5 * time.Minute)
	case "graceful":
		<-term
		pid, _ := readPid(pidFile)
		gone := waitUntil(10*time.Second, func() bool { return !running(pid) })
		note := fmt.Sprintf("daemon gone before the CLI ended: %v", gone)
		if err := os.WriteFile(os.Getenv("CCR_CLI_NOTE"), []byte(note), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// groupCLIMain leaves the run's process group when $CCR_CLI_GROUP is
// "setsid", writes its pid to $CCR_CLI_PID and then, by $CCR_CLI_THEN:
// "graceful" waits for SIGTERM, counts the SIGTERMs it gets for a while
// (its grace), writes "SIGTERMs: N" to $CCR_CLI_NOTE and exits 0; "deaf"
// ignores SIGTERM and waits.
func groupCLIMain() int {
	if os.Getenv("CCR_CLI_GROUP") == "setsid" {
		if _, err := syscall.Setsid(); err != nil {
			fmt.Fprintln(os.Stderr, "setsid:", err)
			return 1
		}
	}
	term := make(chan os.Signal, 8)
	if os.Getenv("CCR_CLI_THEN") == "deaf" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	if err := writePid(os.Getenv("CCR_CLI_PID"), os.Getpid()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("CCR_CLI_THEN") == "deaf" {
		time.Sleep(5 * time.Minute)
		return 0
	}
	<-term
	n := 1
	// The grace in which a second SIGTERM (sent twice for one stop) would
	// come: it is sent right after the first.
	deadline := time.After(500 * time.Millisecond)
count:
	for {
		select {
		case <-term:
			n++
		case <-deadline:
			break count
		}
	}
	if err := os.WriteFile(os.Getenv("CCR_CLI_NOTE"), []byte(fmt.Sprintf("SIGTERMs: %d", n)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// attackParentMain, as its very first action and again and again for a
// while, tries to signal (signal 0) and to ptrace (PTRACE_SEIZE) each
// thread of its parent (the sandbox child), and reads whether the thread
// is confined: whether its NoNewPrivs, Seccomp or Seccomp_filters differ
// from $CCR_BASE_STATUS (the test's own, which the sandbox child
// inherits). It prints "parent VERB" (its parent's first argument), a
// line per success ("signal TID", "ptrace TID", "confined TID"), then
// "attempts N", "self seccomp MODE" (2: the CLI itself is confined) and
// "process: ok" or "process: refused" for a signal to the whole parent.
func attackParentMain() int {
	ppid := os.Getppid()
	dir := "/proc/" + strconv.Itoa(ppid) + "/task"
	found := map[string]bool{}
	var lines []string
	note := func(l string) {
		if !found[l] {
			found[l] = true
			lines = append(lines, l)
		}
	}
	base := os.Getenv("CCR_BASE_STATUS")
	fmt.Println("parent", parentVerb(ppid))
	attempts := 0
	for range 300 {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			fmt.Println("tasks: " + err.Error())
			return 1
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			attempts++
			if err := syscall.Tgkill(ppid, tid, 0); err == nil {
				note("signal " + task.Name())
			}
			if err := unix.PtraceSeize(tid); err == nil {
				note("ptrace " + task.Name()) // detached when this process ends
			}
			if b, err := os.ReadFile(dir + "/" + task.Name() + "/status"); err == nil && confinementOf(string(b)) != base {
				note("confined " + task.Name())
			}
		}
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println("attempts", attempts)
	b, _ := os.ReadFile("/proc/self/status")
	fmt.Println("self seccomp", statusField(string(b), "Seccomp"))
	if err := syscall.Kill(ppid, 0); err != nil {
		fmt.Println("process: refused")
	} else {
		fmt.Println("process: ok")
	}
	return 0
}

// limitParentMain tries to change its parent's (the sandbox child's)
// resource limits, scheduling, affinity, nice value and I/O priority, as
// prlimit --pid, chrt -p, taskset -p, renice and ionice -p would, and its
// own (through pid 0, as glibc, Go and libuv do), and to read its
// parent's limit on open files; it writes "parent VERB" (the parent's
// first argument) and "NAME ok" or "NAME ERROR" per try to $CCR_CLI_NOTE,
// then goes on as cliMain (a setsid'd daemon, which the sandbox child
// must still end: with no files to open, it could not list the run).
func limitParentMain() int {
	ppid := os.Getppid()
	lines := []string{"parent " + parentVerb(ppid)}
	try := func(name string, err error) {
		if err == nil {
			lines = append(lines, name+" ok")
		} else {
			lines = append(lines, name+" "+err.Error())
		}
	}
	errnoOf := func(_, _ uintptr, e unix.Errno) error {
		if e != 0 {
			return e
		}
		return nil
	}
	const schedIdle, schedResetOnFork, ioprioWhoProcess, ioprioIdle = 5, 0x40000000, 1, 3 << 13
	var param [1]int32 // struct sched_param
	var cpus unix.CPUSet
	_ = unix.SchedGetaffinity(0, &cpus)
	var limit unix.Rlimit
	try("prlimit-parent-read", unix.Prlimit(ppid, unix.RLIMIT_NOFILE, nil, &limit))
	try("prlimit-parent-nofile", unix.Prlimit(ppid, unix.RLIMIT_NOFILE, &unix.Rlimit{}, nil))
	try("prlimit-parent-cpu", unix.Prlimit(ppid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: 1, Max: 1}, nil))
	try("sched_setscheduler-parent", errnoOf(unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(ppid), schedIdle, uintptr(unsafe.Pointer(&param)))))
	// The kernel itself refuses SCHED_IDLE to SCHED_OTHER without
	// RLIMIT_NICE (tests run under chrt -i 0): not tried then.
	if pol, _, e := unix.Syscall(unix.SYS_SCHED_GETSCHEDULER, uintptr(ppid), 0, 0); e == 0 && pol&^schedResetOnFork == schedIdle {
		lines = append(lines, "sched_setscheduler-parent-other skipped")
	} else {
		try("sched_setscheduler-parent-other", errnoOf(unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(ppid), schedResetOnFork, uintptr(unsafe.Pointer(&param)))))
	}
	try("sched_setparam-parent", errnoOf(unix.Syscall(unix.SYS_SCHED_SETPARAM, uintptr(ppid), uintptr(unsafe.Pointer(&param)), 0)))
	try("sched_setattr-parent", unix.SchedSetAttr(ppid, &unix.SchedAttr{Policy: schedIdle}, 0))
	try("sched_setaffinity-parent", unix.SchedSetaffinity(ppid, &cpus))
	try("setpriority-parent", unix.Setpriority(unix.PRIO_PROCESS, ppid, 19))
	try("setpriority-group", unix.Setpriority(unix.PRIO_PGRP, 0, 19))
	try("ioprio_set-parent", errnoOf(unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(ppid), ioprioIdle)))
	// Its own, through 0.
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &limit); err == nil {
		try("setrlimit-self", unix.Setrlimit(unix.RLIMIT_NOFILE, &limit))
	}
	// Each set to what it is, which any process may do.
	policy, _, _ := unix.Syscall(unix.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	_, _, _ = unix.Syscall(unix.SYS_SCHED_GETPARAM, 0, uintptr(unsafe.Pointer(&param)), 0)
	try("sched_setscheduler-self", errnoOf(unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, 0, policy&^schedResetOnFork, uintptr(unsafe.Pointer(&param)))))
	try("sched_setaffinity-self", unix.SchedSetaffinity(0, &cpus))
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil {
		try("setpriority-self", unix.Setpriority(unix.PRIO_PROCESS, 0, 20-prio)) // the kernel's 20 - nice
	}
	ioprio, _, _ := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, 0, 0)
	try("ioprio_set-self", errnoOf(unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, 0, ioprio)))
	if err := os.WriteFile(os.Getenv("CCR_CLI_NOTE"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return cliMain()
}

// tracemeMain makes its parent (the sandbox child) its tracer
// (PTRACE_TRACEME, on its one thread), raises SIGUSR1 on that thread, which
// stops it for the tracer, and prints "got SIGUSR1" once its handler has
// the signal; "traceme: ERROR" and 3 when the tracing is refused.
func tracemeMain() int {
	runtime.LockOSThread()
	got := make(chan os.Signal, 1)
	signal.Notify(got, syscall.SIGUSR1)
	if _, _, errno := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0); errno != 0 {
		fmt.Println("traceme:", errno)
		return 3
	}
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGUSR1)
	select {
	case <-got:
		fmt.Println("got SIGUSR1")
		return 0
	case <-time.After(30 * time.Second):
		fmt.Println("no SIGUSR1")
		return 1
	}
}

// parentVerb is the first argument of process pid ("" if unknown): the
// sandbox child's is sandbox.Verb.
func parentVerb(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if args := strings.Split(string(b), "\x00"); len(args) > 1 {
		return args[1]
	}
	return ""
}

// confinementOf is what a /proc/PID/status shows of a process's
// confinement: its NoNewPrivs, Seccomp and Seccomp_filters.
func confinementOf(status string) string {
	var out []string
	for _, name := range []string{"NoNewPrivs", "Seccomp", "Seccomp_filters"} {
		out = append(out, name+"="+statusField(status, name))
	}
	return strings.Join(out, " ")
}

// statusField is the value of a "Name:\tvalue" line of a /proc status.
func statusField(status, name string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// waitUntil polls cond until it holds (true) or d passes (false): the
// helpers' poll.Until, which needs no test.
func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// writePid writes pid to path whole (through a renamed temporary file).
func writePid(path string, pid int) error {
	if err := os.WriteFile(path+".tmp", []byte(strconv.Itoa(pid)), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// running reports whether pid runs; a zombie counts as gone.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// reaperRun is a sandboxed run of this test binary as the CLI of cliMain,
// started as the worker starts a run: leading a session of its own.
type reaperRun struct {
	cmd                               *exec.Cmd
	daemonPid, cliPid, cliNote, cliGo string
}

// testKillGrace is the worker's grace the sandboxed runs of these tests
// are wrapped for: the sandbox child kills a stopped run's whole tree a
// fifth earlier.
const testKillGrace = 2 * time.Second

// sandboxedCmd is the command of a run of program in a sandbox of the
// custom preset, with HOME, PATH and env, in a fresh layout's working
// folder, started as the worker starts a run: leading a session of its
// own. The sandbox must confine it.
func sandboxedCmd(t *testing.T, program string, args []string, env ...string) (cmd *exec.Cmd, work string) {
	t.Helper()
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t)
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: program, Args: args, Env: append([]string{"HOME=" + home, "PATH=/usr/bin:/bin"}, env...),
		Workdir: work, RunDir: run, KillGrace: testKillGrace,
	}
	s, err := sandbox.Wrapper{Self: self, Protected: []string{data}}.Wrap(req)
	if err != nil || !s.Confined {
		t.Fatalf("wrap: %+v, %v", s, err)
	}
	cmd = exec.Command(s.Program, s.Args...)
	cmd.Env, cmd.Dir = req.Env, req.Workdir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, work
}

// startReaperRun starts a sandboxed run of this test binary as the CLI of
// the helper (reaperHelper), with env.
func startReaperRun(t *testing.T, helper string, env ...string) *reaperRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, work := sandboxedCmd(t, self, nil, append([]string{reaperHelper + "=" + helper}, env...)...)
	r := &reaperRun{cmd: cmd, daemonPid: filepath.Join(work, "daemon.pid"), cliPid: filepath.Join(work, "cli.pid"),
		cliNote: filepath.Join(work, "note.txt"), cliGo: filepath.Join(work, "go")}
	// The sandbox child passes its environment on to the CLI.
	cmd.Env = append(cmd.Env, "CCR_DAEMON_PID="+r.daemonPid, "CCR_CLI_PID="+r.cliPid, "CCR_CLI_NOTE="+r.cliNote,
		"CCR_CLI_GO="+r.cliGo)
	r.cmd.Stdout, r.cmd.Stderr = os.Stderr, os.Stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		_ = r.cmd.Wait()
		// Whatever outlived a failed test.
		if pid, err := readPid(r.daemonPid); err == nil && running(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return r
}

// pid waits for the pid file at path and reads it.
func (r *reaperRun) pid(t *testing.T, path string) int {
	t.Helper()
	poll.Until(t, "the pid file "+filepath.Base(path), 30*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	pid, err := readPid(path)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
