package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// reaperHelper names the part this test binary plays when it is started
// again: "daemon" (a process that starts a session of its own), "cli" (a
// CLI that starts a daemon) or "signal-parent" (a CLI that tries to signal
// each thread of the process that started it).
const reaperHelper = "CCR_REAPER_HELPER"

func init() {
	switch os.Getenv(reaperHelper) {
	case "daemon":
		os.Exit(daemonMain())
	case "cli":
		os.Exit(cliMain())
	case "signal-parent":
		os.Exit(signalParentMain())
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
// $CCR_CLI_PID and then, by $CCR_CLI_THEN: "exit" exits 0; "wait" waits
// (SIGTERM ends it); "graceful" waits for SIGTERM, then for the daemon to
// be gone, writes "daemon gone before the CLI ended: BOOL" to
// $CCR_CLI_NOTE and exits 0.
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

// signalParentMain sends signal 0 to each thread of its parent (the
// sandbox child) and prints "thread TID: ok" or "thread TID: refused".
func signalParentMain() int {
	ppid := os.Getppid()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(ppid) + "/task")
	if err != nil {
		fmt.Println("tasks: " + err.Error())
		return 1
	}
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		word := "ok"
		if err := syscall.Tgkill(ppid, tid, 0); err != nil {
			word = "refused"
		}
		fmt.Printf("thread %d: %s\n", tid, word)
	}
	if err := syscall.Kill(ppid, 0); err != nil {
		fmt.Println("process: refused")
	} else {
		fmt.Println("process: ok")
	}
	return 0
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
	cmd                        *exec.Cmd
	daemonPid, cliPid, cliNote string
}

func startReaperRun(t *testing.T, then string) *reaperRun {
	t.Helper()
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t)
	r := &reaperRun{daemonPid: filepath.Join(work, "daemon.pid"), cliPid: filepath.Join(work, "cli.pid"),
		cliNote: filepath.Join(work, "note.txt")}
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: self,
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", reaperHelper + "=cli", "CCR_CLI_THEN=" + then,
			"CCR_DAEMON_PID=" + r.daemonPid, "CCR_CLI_PID=" + r.cliPid, "CCR_CLI_NOTE=" + r.cliNote},
		Workdir: work, RunDir: run,
	}
	s, err := sandbox.Wrapper{Self: self, Protected: []string{data}}.Wrap(req)
	if err != nil || !s.Confined {
		t.Fatalf("wrap: %+v, %v", s, err)
	}
	r.cmd = exec.Command(s.Program, s.Args...)
	r.cmd.Env, r.cmd.Dir = req.Env, req.Workdir
	r.cmd.Stdout, r.cmd.Stderr = os.Stderr, os.Stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
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
			r := startReaperRun(t, tt.then)
			daemon := r.pid(t, r.daemonPid)
			if !running(daemon) {
				t.Fatalf("the daemon %d does not run", daemon)
			}
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

// Ensure a sandboxed run ends as its CLI did: the CLI's exit code, or the
// signal that killed it (the worker labels a run "killed" by that), also a
// signal the Go runtime handles itself (SIGSEGV, SIGSYS of the seccomp
// filter, SIGPIPE); a program that cannot be started is still 127.
func TestReaperMirrorsExit(t *testing.T) {
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t)
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
		{"not found", filepath.Join(work, "no-such-program"), nil, "exit 127"},
	}
	w := sandbox.Wrapper{Self: self, Protected: []string{data}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
				Program: tt.program, Args: tt.args,
				Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
			}
			s, err := w.Wrap(req)
			if err != nil || !s.Confined {
				t.Fatalf("wrap: %+v, %v", s, err)
			}
			cmd := exec.Command(s.Program, s.Args...)
			cmd.Env, cmd.Dir = req.Env, req.Workdir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
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

// Ensure a sandboxed run cannot signal the sandbox child that supervises it
// (to kill it and leave its processes to init): no thread of that process
// is in the run's Landlock domain, whose signals are scoped from ABI 6.
func TestRunCannotSignalItsReaper(t *testing.T) {
	self := landlockSelf(t)
	if sandbox.ABI() < 6 {
		t.Skip("signals are scoped from Landlock ABI 6")
	}
	home, data, work, run, _ := layout(t)
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: self, Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", reaperHelper + "=signal-parent"},
		Workdir: work, RunDir: run,
	}
	s, err := sandbox.Wrapper{Self: self, Protected: []string{data}}.Wrap(req)
	if err != nil || !s.Confined {
		t.Fatalf("wrap: %+v, %v", s, err)
	}
	cmd := exec.Command(s.Program, s.Args...)
	cmd.Env, cmd.Dir = req.Env, req.Workdir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "process: refused" {
		t.Fatalf("the run signalled its sandbox child:\n%s", out)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "thread ") || !strings.HasSuffix(l, ": refused") {
			t.Errorf("the run signalled a thread of its sandbox child: %s", l)
		}
	}
}
