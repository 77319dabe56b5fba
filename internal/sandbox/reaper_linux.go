package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crosschat/crosschat-relay/internal/procstat"
)

// The sandbox child on Linux does not exec the CLI: it stays as the run's
// top process, a subreaper (PR_SET_CHILD_SUBREAPER), so every process the
// run starts, even one that leaves the run's process group (setsid, a
// double fork), stays in its tree: orphans are re-parented to it, not to
// init. When the CLI exits, or once a stop begins (SIGTERM, SIGINT or
// SIGHUP), it ends them, and it exits as the CLI did.
//
// This process is never confined, on any thread: it starts its own binary
// with execVerb, which confines itself (Landlock, seccomp) and execs the
// CLI. No thread of the reaper is ever in the run's Landlock domain, so
// the run can neither ptrace it (Landlock refuses tracing a process outside
// the domain) nor, from Landlock ABI 6 on, signal it (to kill it and leave
// its tree to init); the seccomp filter refuses it changing the reaper's
// limits, scheduling and priorities (see socketFilter), at every ABI. It
// is not dumpable either (PR_SET_DUMPABLE 0): a process of the user's that
// is not root cannot ptrace it nor read its memory, and a crash leaves no
// core dump of it.

// reapTick is how often a stopping run's tree is walked again for
// processes outside its group, and a cleanup for processes that appeared.
const reapTick = 50 * time.Millisecond

// stuckAfter bounds a cleanup in which nothing new was killed: what is left
// then has SIGKILL pending (blocked in the kernel, uninterruptibly), never
// runs user code again, and is left to init.
const stuckAfter = 5 * time.Second

// leftoverGrace is how long the processes left when the CLI has ended (an
// MCP server in its group, a daemon) have between SIGTERM and SIGKILL; the
// rest of a stopped run's grace bounds it.
const leftoverGrace = 1500 * time.Millisecond

// procDir is where the processes are listed (replaced in a test).
var procDir = procstat.Dir

// superviseRun makes this process a subreaper that cannot be dumped,
// starts its own binary with execVerb (the run: it confines itself and
// execs the command) as its child, in its process group, with the
// standard input, output and error passed through, and supervises it. A
// kernel without subreapers (before Linux 3.4) gets the confinement and
// exec of earlier versions.
func superviseRun(inv invocation, stderr io.Writer) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return confineAndStart(inv.rules, inv.cmd, stderr)
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// One thread starts the CLI and waits for it: the CLI's parent thread,
	// which is the tracer of a CLI that asks to be traced (PTRACE_TRACEME)
	// and alone can let go of it (detach). (Verb runs during the program's
	// initialization, on its main thread, the one orphans are given to.)
	runtime.LockOSThread()
	r := &reaper{self: os.Getpid(), pgid: unix.Getpgrp(), grace: inv.grace, stderr: stderr,
		stop: make(chan os.Signal, 4), chld: make(chan os.Signal, 1)}
	// Before the start: a stop or an exit is never missed. A stop signal
	// this process inherited ignored (nohup) stays ignored, for the CLI too.
	for _, sig := range []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		if !signal.Ignored(sig) {
			signal.Notify(r.stop, sig)
		}
	}
	signal.Notify(r.chld, unix.SIGCHLD)
	beforeStart(r)
	// A stop that came before the CLI exists never reaches it (the
	// worker's SIGTERM to the group found only this process): the CLI is
	// not started, and this process ends by the stop signal.
	select {
	case sig := <-r.stop:
		signal.Stop(r.chld)
		fmt.Fprintln(stderr, "crosschat sandbox: the run was stopped before its CLI started")
		raise(sig.(syscall.Signal))
		return 128 + int(sig.(syscall.Signal))
	default:
	}
	// The rules go on as they came, on the command line.
	argv := append([]string{os.Args[0], execVerb, "--rules", inv.rulesJSON, "--"}, inv.cmd...)
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}}
	// This very binary, even if its file was replaced since; without /proc,
	// the path it was started by (the worker gives an absolute one).
	pid, err := syscall.ForkExec("/proc/self/exe", argv, attr)
	if err == syscall.ENOENT && filepath.IsAbs(os.Args[0]) {
		pid, err = syscall.ForkExec(os.Args[0], argv, attr)
	}
	if err != nil {
		signal.Stop(r.stop)
		signal.Stop(r.chld)
		fmt.Fprintf(stderr, "crosschat sandbox: the run was not started: start the sandbox: %v\n", err)
		return 126
	}
	r.cli = pid
	return r.supervise()
}

// beforeStart runs just before the CLI is started (a test stops the run
// there).
var beforeStart = func(*reaper) {}

// reaper supervises the CLI it started and the CLI's whole process tree.
type reaper struct {
	self, pgid int // this process, and its (and the CLI's at first) process group
	cli        int
	// cliGroup is the CLI's process group when last seen (0 before).
	cliGroup   int
	grace      time.Duration // of a stopped run, before the whole tree is killed
	stderr     io.Writer
	stop, chld chan os.Signal
	status     unix.WaitStatus // the CLI's, once it exited
	exited     bool
	stopping   bool
	killAt     time.Time // when a stopped run's whole tree is killed
	// sent are the descendants sent each signal.
	sent map[unix.Signal]map[procID]bool
	// walkFailed: a walk of the processes failed, and it was said.
	walkFailed bool
}

// supervise waits for the CLI. Once a stop began it kills the descendants
// outside this process's group and the CLI's, passes the stop signal on to
// a CLI that left this group (one in it has the worker's group signal
// already), and once the grace is over kills the whole tree; when the CLI
// has exited it ends the rest of the tree, reaps it, and exits as the CLI
// did.
func (r *reaper) supervise() int {
	var tick, killAll <-chan time.Time
	for !r.exited {
		select {
		case sig := <-r.stop:
			if !r.stopping {
				r.stopping, r.killAt = true, time.Now().Add(r.grace)
				t := time.NewTicker(reapTick)
				defer t.Stop()
				k := time.NewTimer(r.grace)
				defer k.Stop()
				tick, killAll = t.C, k.C
			}
			r.signalTree(unix.SIGKILL, true)
			r.forward(sig.(syscall.Signal))
		case <-r.chld:
		case <-tick:
			r.signalTree(unix.SIGKILL, true)
		case <-killAll:
			killAll = nil
			r.signalTree(unix.SIGKILL, false)
		}
		r.reap()
	}
	r.cleanup()
	if r.status.Signaled() {
		raise(r.status.Signal())
	}
	return r.status.ExitStatus()
}

// forward passes a stop signal on to a CLI that left this process's group:
// to its own group when it leads one, else to it alone.
func (r *reaper) forward(sig syscall.Signal) {
	switch g, err := unix.Getpgid(r.cli); {
	case err != nil || g == r.pgid: // ended, or in the group the worker signals
	case g == r.cli:
		_ = unix.Kill(-g, sig)
	default:
		_ = unix.Kill(r.cli, sig)
	}
}

// cleanup ends every descendant left once the CLI has exited: SIGTERM,
// then after leftoverGrace (or the rest of a stopped run's grace) SIGKILL,
// again and again until no child is left to reap (a process that forked
// while it was killed leaves its child to this process), or until nothing
// new was killed for stuckAfter.
func (r *reaper) cleanup() {
	t := time.NewTicker(reapTick)
	defer t.Stop()
	termEnd := time.Now().Add(leftoverGrace)
	if r.stopping && r.killAt.Before(termEnd) {
		termEnd = r.killAt
	}
	var progress time.Time
	for {
		sig := unix.SIGTERM
		if !time.Now().Before(termEnd) {
			sig = unix.SIGKILL
			if progress.IsZero() {
				progress = time.Now()
			}
		}
		sent, ok := r.signalTree(sig, false)
		if !ok {
			return // said; nothing to end is known
		}
		if sent && sig == unix.SIGKILL {
			progress = time.Now()
		}
		if !r.reap() {
			return
		}
		if sig == unix.SIGKILL && time.Since(progress) > stuckAfter {
			fmt.Fprintf(r.stderr, "crosschat sandbox: processes of the run did not end %v after SIGKILL; they are left to the system\n", stuckAfter)
			return
		}
		select {
		case <-r.chld:
		case <-t.C:
		}
	}
}

// reap collects every child that ended (the CLI's status among them) and
// reports whether a child is left. A child that made this process its
// tracer (PTRACE_TRACEME) and stopped is not ended: it is let go (detach).
func (r *reaper) reap() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil: // ECHILD: no child, so no descendant, is left
			return false
		case pid == 0:
			return true
		case ws.Stopped():
			detach(pid, ws.StopSignal())
		case pid == r.cli && (ws.Exited() || ws.Signaled()):
			r.status, r.exited = ws, true
		}
	}
}

// detach lets go of a tracee of this process stopped by sig, and resumes
// it with sig delivered, as it would have been without a tracer; save the
// SIGTRAP the kernel sends a tracee that execs (SI_USER, from itself),
// which exists only for a tracer.
func detach(pid int, sig syscall.Signal) {
	if sig == unix.SIGTRAP {
		var info [128]byte // siginfo_t: si_signo, si_errno, si_code, then si_pid at 16 (64-bit)
		_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(pid), 0, uintptr(unsafe.Pointer(&info)), 0, 0)
		code := *(*int32)(unsafe.Pointer(&info[8]))
		from := *(*int32)(unsafe.Pointer(&info[16]))
		if errno == 0 && code == 0 && int(from) == pid {
			sig = 0
		}
	}
	_, _, _ = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(pid), 0, uintptr(sig), 0, 0)
}

// signalTree sends sig to the live descendants not yet sent it; when
// outside, only to those outside this process's group and outside the
// CLI's (the CLI and its group get its grace). It reports whether it sent
// any, and whether the processes could be listed (a failed walk is said
// once).
func (r *reaper) signalTree(sig unix.Signal, outside bool) (sent, ok bool) {
	procs, err := descendants(r.self)
	if err != nil {
		if !r.walkFailed {
			r.walkFailed = true
			fmt.Fprintf(r.stderr, "crosschat sandbox: the run's processes cannot be listed, so none is ended but the CLI: %v\n", err)
		}
		return false, false
	}
	// The CLI's group, also once it is a zombie (its stat still shows its
	// group) or gone (the group last seen): the processes of a setsid'd
	// CLI's group keep their grace.
	for _, p := range procs {
		if p.PID == r.cli && p.PGID > 0 {
			r.cliGroup = p.PGID
		}
	}
	if r.sent == nil {
		r.sent = map[unix.Signal]map[procID]bool{}
	}
	if r.sent[sig] == nil {
		r.sent[sig] = map[procID]bool{}
	}
	for _, p := range procs {
		id := procID{p.PID, p.Start}
		spared := outside && (p.PGID == r.pgid || p.PID == r.cli || p.PGID == r.cliGroup)
		if p.Zombie() || spared || r.sent[sig][id] {
			continue
		}
		signalProc(p, sig)
		r.sent[sig][id] = true
		sent = true
	}
	return sent, true
}

// procID tells a process from any other, one given its id later included.
type procID struct {
	pid   int
	start uint64
}

// descendants lists the processes under root, from a walk of /proc; one
// that moved while /proc was read (re-parented to root) is found by the
// next walk. It fails when /proc cannot be listed or does not show root.
func descendants(root int) ([]procstat.Stat, error) {
	d, err := os.Open(procDir)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", procDir, err)
	}
	if _, ok := procstat.Read(procDir, root); !ok {
		return nil, fmt.Errorf("%s does not show this process", procDir)
	}
	children := map[int][]procstat.Stat{}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := procstat.Read(procDir, pid); ok {
			children[p.PPID] = append(children[p.PPID], p)
		}
	}
	var out []procstat.Stat
	seen := map[int]bool{root: true} // a loop of ids reused while /proc was read
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !seen[c.PID] {
				seen[c.PID] = true
				out = append(out, c)
				queue = append(queue, c.PID)
			}
		}
	}
	return out, nil
}

// signalProc sends sig to p, through a pidfd opened while p still has
// the start time it was listed with, so a process given p's id since is
// never hit.
func signalProc(p procstat.Stat, sig unix.Signal) {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err == unix.ENOSYS { // before Linux 5.3
		if q, ok := procstat.Read(procDir, p.PID); ok && q.Start == p.Start {
			_ = unix.Kill(p.PID, sig)
		}
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if q, ok := procstat.Read(procDir, p.PID); ok && q.Start == p.Start {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}

// raise ends this process by sig, as the CLI ended: the signal's default
// action restored (the Go runtime's own handlers would turn SIGSEGV or
// SIGABRT into a crash report and exit 2), no core dump of this process,
// the signal unblocked and sent. It returns only if the process outlived
// it.
func raise(sig syscall.Signal) {
	runtime.LockOSThread()
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	signal.Reset(sig)
	// struct sigaction with SIG_DFL, no flags and an empty mask is all
	// zeros whatever the architecture's layout; the kernel's sigset is 8
	// bytes (64 signals) on amd64 and arm64.
	var act [4]uint64
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	mask := uint64(1) << (uint(sig) - 1)
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0)
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	_ = unix.Kill(os.Getpid(), sig)
	// The default action of a signal that ends a process runs on the
	// return from the system call; a signal whose default is not to end it
	// (which the CLI cannot have died of) leaves an exit code.
	time.Sleep(100 * time.Millisecond)
	os.Exit(128 + int(sig))
}
