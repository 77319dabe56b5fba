package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sandbox child on Linux does not exec the CLI: it stays as the run's
// top process, a subreaper (PR_SET_CHILD_SUBREAPER), so every process the
// run starts, even one that leaves the run's process group (setsid, a
// double fork), stays in its tree: orphans are re-parented to it, not to
// init. When the CLI exits, or once a stop begins (SIGTERM, SIGINT or
// SIGHUP), it kills them, and it exits as the CLI did.
//
// The confinement is applied to a thread of its own, which starts the CLI
// (a child inherits its creator thread's Landlock domain and seccomp
// filter) and then ends: the process that supervises the run keeps no
// thread in the run's sandbox, so from Landlock ABI 6 on the run can
// neither signal it (to kill it and orphan its tree) nor ptrace it.

// started hands the CLI that startProgram started on the confining thread
// to onOwnThread, which supervises it on the main thread.
var started = make(chan *reaper, 1)

// reapTick is how often a stopping run's tree is walked again for
// processes outside its group, and a cleanup for processes that appeared.
const reapTick = 50 * time.Millisecond

// stuckAfter bounds a cleanup in which nothing new was killed: what is left
// then has SIGKILL pending (blocked in the kernel, uninterruptibly), never
// runs user code again, and is left to init.
const stuckAfter = 5 * time.Second

// onOwnThread runs f (which confines its thread and starts the CLI) on a
// new thread locked to it, which ends with f's goroutine. It returns f's
// exit code when f did not start the CLI; otherwise it supervises the CLI
// on the calling thread and returns the CLI's exit code, or ends this
// process by the signal that ended the CLI.
func onOwnThread(f func() int) int {
	done := make(chan int, 1)
	go func() {
		// Never unlocked: the Go runtime ends a thread whose locked
		// goroutine returns, so the confinement serves nothing else.
		runtime.LockOSThread()
		done <- f()
	}()
	select {
	case code := <-done:
		return code
	case r := <-started:
		return r.supervise()
	}
}

// startProgram makes this process a subreaper and starts the program as
// its child, in its process group, with the standard input, output and
// error passed through; the calling (confined) thread then ends, and
// onOwnThread supervises the child. It returns only when the program was
// not started. A kernel without subreapers (before Linux 3.4) gets the
// exec of earlier versions.
func startProgram(program string, argv, env []string) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return execve(program, argv, env)
	}
	r := &reaper{self: os.Getpid(), pgid: unix.Getpgrp(),
		stop: make(chan os.Signal, 4), chld: make(chan os.Signal, 1)}
	// Before the start: a stop or an exit is never missed. A stop signal
	// this process inherited ignored (nohup) stays ignored, for the CLI too.
	for _, sig := range []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		if !signal.Ignored(sig) {
			signal.Notify(r.stop, sig)
		}
	}
	signal.Notify(r.chld, unix.SIGCHLD)
	pid, err := syscall.ForkExec(program, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		signal.Stop(r.stop)
		signal.Stop(r.chld)
		return err
	}
	r.cli = pid
	started <- r
	runtime.Goexit()
	return nil
}

// reaper supervises the CLI it started and the CLI's whole process tree.
type reaper struct {
	self, pgid int // this process, and its (and the CLI's) process group
	cli        int
	stop, chld chan os.Signal
	status     unix.WaitStatus // the CLI's, once it exited
	exited     bool
	killed     map[procID]bool // the descendants sent SIGKILL
}

// supervise waits for the CLI, forwarding stop signals to it and, once a
// stop began, killing the descendants outside its process group (those
// inside get the worker's group signals, and the CLI its grace to write
// its transcript); when the CLI has exited it kills and reaps the rest of
// the tree and exits as the CLI did.
func (r *reaper) supervise() int {
	r.killed = map[procID]bool{}
	var tick <-chan time.Time
	for !r.exited {
		select {
		case sig := <-r.stop:
			if tick == nil {
				t := time.NewTicker(reapTick)
				defer t.Stop()
				tick = t.C
			}
			r.killTree(true)
			_ = unix.Kill(r.cli, sig.(syscall.Signal))
		case <-r.chld:
		case <-tick:
			r.killTree(true)
		}
		r.reap()
	}
	r.cleanup()
	if r.status.Signaled() {
		raise(r.status.Signal())
	}
	return r.status.ExitStatus()
}

// cleanup kills every descendant left, again and again until no child is
// left to reap (a process that forked while it was killed leaves its child
// to this process), or until nothing new was killed for stuckAfter.
func (r *reaper) cleanup() {
	t := time.NewTicker(reapTick)
	defer t.Stop()
	progress := time.Now()
	for {
		if r.killTree(false) {
			progress = time.Now()
		}
		if !r.reap() {
			return
		}
		if time.Since(progress) > stuckAfter {
			fmt.Fprintf(os.Stderr, "crosschat sandbox: processes of the run did not end %v after SIGKILL; they are left to the system\n", stuckAfter)
			return
		}
		select {
		case <-r.chld:
		case <-t.C:
		}
	}
}

// reap collects every child that ended (the CLI's status among them) and
// reports whether a child is left.
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
		case pid == r.cli:
			r.status, r.exited = ws, true
		}
	}
}

// killTree sends SIGKILL to the live descendants not yet sent it (only
// those outside the process group when outside), and reports whether it
// sent any.
func (r *reaper) killTree(outside bool) bool {
	sent := false
	for _, p := range descendants(r.self) {
		id := procID{p.pid, p.start}
		if p.zombie() || outside && p.pgid == r.pgid || r.killed[id] {
			continue
		}
		killProc(p)
		r.killed[id] = true
		sent = true
	}
	return sent
}

// procStat is what /proc/PID/stat tells of a process: its id, parent,
// group, state and start time (which, with the id, tells it from a later
// process given the same id).
type procStat struct {
	pid, ppid, pgid int
	state           byte
	start           uint64
}

// procID tells a process from any other, one given its id later included.
type procID struct {
	pid   int
	start uint64
}

func (p procStat) zombie() bool { return p.state == 'Z' || p.state == 'X' }

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// From field 3: state, ppid, pgrp, … starttime (field 22).
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], start: start}, true
}

// descendants lists the processes under root, from a walk of /proc; one
// that moved while /proc was read (re-parented to root) is found by the
// next walk.
func descendants(root int) []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	children := map[int][]procStat{}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []procStat
	seen := map[int]bool{root: true} // a loop of ids reused while /proc was read
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}

// killProc sends SIGKILL to p, through a pidfd opened while p still has
// the start time it was listed with, so a process given p's id since is
// never hit.
func killProc(p procStat) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err == unix.ENOSYS { // before Linux 5.3
		if q, ok := readStat(p.pid); ok && q.start == p.start {
			_ = unix.Kill(p.pid, unix.SIGKILL)
		}
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if q, ok := readStat(p.pid); ok && q.start == p.start {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
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
