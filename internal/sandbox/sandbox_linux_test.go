package sandbox_test

import (
	"errors"
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

// probeScript tries each access and prints "name ok" or "name denied".
const probeScript = `
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi; }
try read-token cat "$DATA/api-token"
try read-home cat "$HOME/secret.txt"
try read-other-project cat "$HOME/projects/other/notes.md"
try list-other-project ls "$HOME/projects/other"
try write-home sh -c 'echo x > "$HOME/outside.txt"'
try write-data sh -c 'echo x > "$DATA/planted"'
try read-system cat /etc/passwd
try exec-system /bin/true
try write-workdir sh -c 'echo x > "$WORK/made.txt"'
try read-workdir cat "$WORK/README.md"
try write-run sh -c 'echo x > "$RUN/result.md"'
try write-tmp sh -c 'echo x > "$TMPDIR/scratch"'
try write-extra-ro sh -c 'echo x > "$SHARED/new.txt"'
try read-extra-ro cat "$SHARED/spec.md"
try read-relay-environ cat "/proc/$RELAY_PID/environ"
try list-dev ls /dev
try write-dev-shm sh -c 'echo x > /dev/shm/ccr-probe'
try write-dev-null sh -c 'echo x > /dev/null'
try read-urandom head -c 1 /dev/urandom
try signal-relay kill -0 "$RELAY_PID"
`

// layout makes a home folder with the relay's data folder (api-token), a
// secret, another project, the run's project and its run folder.
func layout(t *testing.T) (home, data, work, run, shared string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	data = filepath.Join(home, ".local", "share", "crosschat-relay")
	work = filepath.Join(home, "projects", "mine")
	run = filepath.Join(data, "runs", "t1")
	shared = filepath.Join(home, "shared")
	files := map[string]string{
		filepath.Join(data, "api-token"):                       "cca_admin_secret",
		filepath.Join(home, "secret.txt"):                      "ssh key",
		filepath.Join(home, "projects", "other", "notes.md"):   "other project",
		filepath.Join(work, "README.md"):                       "mine",
		filepath.Join(run, "task.md"):                          "task",
		filepath.Join(shared, "spec.md"):                       "spec",
		filepath.Join(home, ".claude", "settings.json"):        "{}",
		filepath.Join(home, ".local", "bin", "placeholder.sh"): "",
	}
	for p, body := range files {
		writeTestFile(t, p, body)
	}
	return home, data, work, run, shared
}

// Ensure a child in the sandbox cannot read the data folder's api-token, a
// file in the home folder, or another project, nor write outside its
// folders, nor signal the process that started it (the relay), while it
// reads the system and writes its working folder, its result file and its
// temporary folder; and that without the sandbox each access succeeds (so
// the test can fail).
func TestChildInSandbox(t *testing.T) {
	self := landlockSelf(t)
	denied := []string{"read-token", "read-home", "read-other-project", "list-other-project", "write-home", "write-data", "write-extra-ro",
		"list-dev"}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		denied = append(denied, "write-dev-shm")
		t.Cleanup(func() { _ = os.Remove("/dev/shm/ccr-probe") })
	}
	if sandbox.ABI() >= 6 { // signals are scoped from Landlock ABI 6
		denied = append(denied, "signal-relay")
	}
	allowed := []string{"read-system", "exec-system", "write-workdir", "read-workdir", "write-run", "write-tmp", "read-extra-ro",
		"write-dev-null", "read-urandom"}
	for _, sandboxed := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[sandboxed]
		t.Run(name, func(t *testing.T) {
			home, data, work, run, shared := layout(t)
			env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "DATA=" + data, "WORK=" + work, "RUN=" + run,
				"SHARED=" + shared, "TMPDIR=" + filepath.Join(run, "tmp"), "RELAY_PID=" + strconv.Itoa(os.Getpid())}
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn, AllowPaths: []string{shared + ":ro"}},
				Program: "/bin/sh", Args: []string{"-c", probeScript},
				Env: env, Workdir: work, RunDir: run, Outputs: []string{filepath.Join(run, "result.md")},
			}
			w := sandbox.Wrapper{Self: self, Protected: []string{data}}
			got := runProbe(t, w, sandboxed, req)
			var s runspec.Sandboxed
			if sandboxed {
				// The log line of the same rules.
				if s, _ = w.Wrap(req); !strings.Contains(s.Log, work) || !strings.Contains(s.Log, shared) {
					t.Fatalf("wrapped: %+v", s)
				}
			}
			wantProbe(t, got, allowed, "ok")
			wantProbe(t, got, denied, map[bool]string{true: "denied", false: "ok"}[sandboxed])
			// Landlock's ptrace rule refuses this to an ordinary user on
			// Linux; as root (uid 0) it goes through on Linux 6.18, and an
			// emulated kernel (gVisor) may not have the rule at all: it is
			// reported, and a relay running as root says so in the run log.
			t.Logf("reading the relay's /proc/PID/environ as uid %d: %s", os.Geteuid(), got["read-relay-environ"])
			if sandboxed && os.Geteuid() == 0 && (!s.Warning || !strings.Contains(s.Log, "the relay runs as root")) {
				t.Errorf("a run of a relay running as root has no warning: %+v", s)
			}
			if _, err := os.Stat(filepath.Join(home, "outside.txt")); (err == nil) == sandboxed {
				t.Errorf("outside.txt written = %v with the sandbox %s", err == nil, name)
			}
		})
	}
}

// Ensure a run that must be sandboxed is refused when the kernel has no
// Landlock or no seccomp filter, and goes ahead with a warning when the
// worker allows it.
func TestNoLandlock(t *testing.T) {
	tests := []struct {
		name    string
		abi     int
		seccomp bool
		missing string
	}{
		{"no Landlock", 0, true, "no Landlock"},
		{"no seccomp", 7, false, "no seccomp filter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := sandbox.Wrapper{Self: "/relay", GOOS: "linux", ABI: func() int { return tt.abi }, Seccomp: func() bool { return tt.seccomp }}
			req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "codex"}, Program: "/usr/bin/codex", Args: []string{"exec"},
				Workdir: "/w", RunDir: t.TempDir()}
			if _, err := w.Wrap(req); err == nil || !strings.Contains(err.Error(), tt.missing) {
				t.Fatalf("strict: %v", err)
			}
			req.Config.AllowUnsandboxed = true
			s, err := w.Wrap(req)
			if err != nil || s.Confined || !s.Warning || s.Program != "/usr/bin/codex" || !strings.Contains(s.Log, "Not sandboxed") ||
				!strings.Contains(s.Log, tt.missing) {
				t.Fatalf("allowed unsandboxed: %+v, %v", s, err)
			}
		})
	}
}

// Ensure a custom program kept directly in the home folder gets a rule for
// itself alone: it runs, but neither the rest of the home folder nor the
// relay's data folder inside it becomes readable.
func TestProgramInHomeFolder(t *testing.T) {
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t)
	program := filepath.Join(home, "agent.sh")
	script := "#!/bin/sh\n" + `try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi; }
echo "started ok"
try read-home cat "$HOME/secret.txt"
try read-token cat "$DATA/api-token"
try list-home ls "$HOME"
`
	if err := os.WriteFile(program, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "DATA=" + data}
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: program, Env: env, Workdir: work, RunDir: run,
	}
	w := sandbox.Wrapper{Self: self, Protected: []string{data}}
	s, err := w.Wrap(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Log, "holds the relay's data folder") || strings.Contains(s.Log, home+",") || strings.Contains(s.Log, home+" ") {
		t.Errorf("the rules allow the home folder: %s", s.Log)
	}
	got := runProbe(t, w, true, req)
	wantProbe(t, got, []string{"started"}, "ok")
	wantProbe(t, got, []string{"read-home", "read-token", "list-home"}, "denied")
}

// Ensure a run whose folders hold the relay's data folder is refused,
// unless the operator allowed that path explicitly (then its log warns).
func TestProtectedOverlapRefused(t *testing.T) {
	home, data, work, run, _ := layout(t)
	w := sandbox.Wrapper{Self: "/relay", Protected: []string{data}, GOOS: "linux", ABI: func() int { return 7 }}
	req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: home, RunDir: run}
	if _, err := w.Wrap(req); err == nil || !strings.Contains(err.Error(), "data folder") {
		t.Fatalf("a working folder holding the data folder: %v", err)
	}
	req.Config.AllowPaths = []string{home + ":rw"}
	s, err := w.Wrap(req)
	if err != nil || !s.Confined || !s.Warning || !strings.Contains(s.Log, "holds the relay's data folder") {
		t.Fatalf("allowed explicitly: %+v, %v", s, err)
	}
	// A working or extra folder that is a symbolic link to the data folder
	// (made by an earlier run inside its own folder) reaches it all the same.
	link := filepath.Join(work, "x")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	for _, r := range []runspec.SandboxRequest{
		{Workdir: link},
		{Workdir: work, ExtraDirs: []string{link}},
	} {
		req := req
		req.Workdir, req.ExtraDirs, req.Config.AllowPaths = r.Workdir, r.ExtraDirs, r.Config.AllowPaths
		if _, err := w.Wrap(req); err == nil || !strings.Contains(err.Error(), "data folder") {
			t.Errorf("workdir %s, extra %v, allowed %v (a link to the data folder): %v", r.Workdir, r.ExtraDirs, r.Config.AllowPaths, err)
		}
	}
	// Allowed explicitly through the link: the operator's choice, with a warning.
	req.Workdir, req.Config.AllowPaths = link, []string{link + ":rw"}
	if s, err := w.Wrap(req); err != nil || !strings.Contains(s.Log, "holds the relay's data folder") || !strings.Contains(s.Log, data) {
		t.Fatalf("a link allowed explicitly: %+v, %v", s, err)
	}
}

// Ensure a run that could write the relay's own program (which the worker
// starts unconfined for every run) is refused: a working or extra folder,
// or a read-write allowed path, that holds it (a relay built in a project
// that is also a worker's folder), as named or through a link to it;
// reading it stays allowed, and a read-write path the operator allowed
// explicitly gives a warning instead.
func TestSelfOverlapRefused(t *testing.T) {
	home, data, work, run, shared := layout(t)
	bin := filepath.Join(work, "build", "bin", "crosschat-relay")
	writeTestFile(t, bin, "relay")
	link := filepath.Join(home, "relay-link")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(home, "projects", "other")
	tests := []struct {
		name, self, workdir string
		extra, allow        []string
		// want: "refused", "warning" or "ok".
		want string
	}{
		{"the working folder holds it", bin, work, nil, nil, "refused"},
		{"an extra folder holds it", bin, other, []string{work}, nil, "refused"},
		{"its folder is the working folder", bin, filepath.Dir(bin), nil, nil, "refused"},
		{"through a link to it", link, work, nil, nil, "refused"},
		{"read-only allowed path", bin, other, nil, []string{work + ":ro"}, "ok"},
		{"read-write allowed path", bin, other, nil, []string{work + ":rw"}, "warning"},
		{"a subfolder beside it", bin, filepath.Join(work, "src"), nil, nil, "ok"},
		{"elsewhere", bin, shared, nil, nil, "ok"},
	}
	if err := os.MkdirAll(filepath.Join(work, "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := sandbox.Wrapper{Self: tt.self, Protected: []string{data}, GOOS: "linux", ABI: func() int { return 7 }, Seccomp: func() bool { return true }}
			req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn, AllowPaths: tt.allow},
				Program: "/bin/sh", Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: tt.workdir, ExtraDirs: tt.extra, RunDir: run}
			s, err := w.Wrap(req)
			got := "ok"
			switch {
			case err != nil && strings.Contains(err.Error(), "relay's own program "+bin):
				got = "refused"
			case err != nil:
				t.Fatalf("wrap: %v", err)
			case strings.Contains(s.Log, "relay's own program "+bin):
				got = "warning"
			}
			if got != tt.want {
				t.Errorf("got %s, want %s: %v; log: %s", got, tt.want, err, s.Log)
			}
		})
	}
}

// Ensure a CLI's arguments for a confined run (Codex's own sandbox off) are
// used only where the run is actually confined: a kernel without Landlock
// (the worker allowing unsandboxed runs) starts the plain arguments, and a
// child whose confinement fails otherwise (here: Landlock's limit of 16
// nested layers, reached by real nested sandbox children) starts neither,
// though the worker allows unsandboxed runs (that is for kernels without
// Landlock, not for rules that fail).
func TestConfinedArgsOnlyWhenConfined(t *testing.T) {
	_, _, work, run, _ := layout(t)
	req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "codex", AllowUnsandboxed: true},
		Program: "/bin/echo", Args: []string{"--sandbox", "workspace-write"}, ConfinedArgs: []string{"--sandbox", "danger-full-access"},
		Env: []string{"PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run}
	s, err := sandbox.Wrapper{Self: "/relay", GOOS: "linux", ABI: func() int { return 0 }}.Wrap(req)
	if err != nil || s.Confined || strings.Join(s.Args, " ") != "--sandbox workspace-write" {
		t.Fatalf("without Landlock: %+v, %v", s, err)
	}
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if s, err = (sandbox.Wrapper{Self: self}).Wrap(req); err != nil || !s.Confined || !strings.Contains(strings.Join(s.Args, " "), "danger-full-access") {
		t.Fatalf("confined: %+v, %v", s, err)
	}
	program, args := s.Program, s.Args
	outer := `{"system":["/usr","/bin","/lib","/lib64","/etc","/proc"],"devices":["/dev/null"],"ro":[` +
		strconv.Quote(filepath.Dir(self)) + `],"rw":[],"required":false}`
	for range 16 {
		args = append([]string{sandbox.Verb, "--rules", outer, "--", program}, args...)
		program = self
	}
	cmd := exec.Command(program, args...)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 126 || !strings.Contains(string(out), "the run was not started") ||
		strings.Contains(string(out), "--sandbox") {
		t.Fatalf("a child whose confinement failed: %v: %s", err, out)
	}
}

// Ensure a confined run of a relay running as root says in its log that it
// can still read other processes' environment; a relay of an ordinary user
// has no such warning.
func TestRootWarning(t *testing.T) {
	_, _, work, run, _ := layout(t)
	req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Env: []string{"PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run}
	for _, uid := range []int{0, 1000} {
		w := sandbox.Wrapper{Self: "/relay", GOOS: "linux", ABI: func() int { return 7 }, UID: func() int { return uid }}
		s, err := w.Wrap(req)
		if err != nil || !s.Confined {
			t.Fatalf("uid %d: %+v, %v", uid, s, err)
		}
		if warned := s.Warning && strings.Contains(s.Log, "the relay runs as root") && strings.Contains(s.Log, "/proc/PID/environ"); warned != (uid == 0) {
			t.Errorf("uid %d: warned %v: %s", uid, warned, s.Log)
		}
	}
}

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
	try("sched_setscheduler-parent-other", errnoOf(unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(ppid), schedResetOnFork, uintptr(unsafe.Pointer(&param)))))
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
	// on its threads) starves nothing, and stays allowed.
	want := map[string]string{"parent": sandbox.Verb, "prlimit-parent-read": "ok", "sched_setscheduler-parent-other": "ok"}
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
