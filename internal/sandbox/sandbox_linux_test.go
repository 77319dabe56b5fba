package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
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
	tmp, err := filepath.EvalSymlinks(t.TempDir()) // TMPDIR may be behind a link
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(tmp, "home")
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
	// Allowed through the link: explicit is judged on the path as the
	// operator typed it, which does not name the data folder (a run may
	// have put the link there since), so it is refused; typed as the data
	// folder itself, it is the operator's choice, with a warning.
	req.Workdir, req.Config.AllowPaths = link, []string{link + ":rw"}
	if _, err := w.Wrap(req); err == nil || !strings.Contains(err.Error(), "data folder") {
		t.Fatalf("a link to the data folder allowed by its own name: %v", err)
	}
	req.Workdir, req.Config.AllowPaths = work, []string{data + ":ro"}
	if s, err := w.Wrap(req); err != nil || !strings.Contains(s.Log, "holds the relay's data folder") || !strings.Contains(s.Log, data) {
		t.Fatalf("the data folder allowed explicitly: %+v, %v", s, err)
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
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
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

// Ensure every path inside the relay's data folder is protected, not only
// the folder and what holds it: a working or extra folder, an allowed
// path (also one reaching it through a link) or a CLI folder a variable
// names that lies inside the data folder (another worker's CLI home, the
// other runs' folders) refuses the run, unless the operator typed that
// very path among the allowed ones (then a warning); the run's own run
// folder and CLI home, inside it too, are not refused. Before, only a path
// that was or held the data folder was.
func TestInsideDataFolderRefused(t *testing.T) {
	home, data, work, run, _ := layout(t)
	other := filepath.Join(data, "cli-homes", "other", "claude-code")
	writeTestFile(t, filepath.Join(other, "settings.json"), "{}")
	link := filepath.Join(work, "homes")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	w := sandbox.Wrapper{Self: "/relay", Protected: []string{data}, GOOS: "linux", ABI: func() int { return 7 }, Seccomp: func() bool { return true },
		Homes: filepath.Join(data, "cli-homes")}
	base := runspec.SandboxRequest{Config: relay.WorkerConfig{AgentSlug: "builder", Harness: "claude-code", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run}
	for _, tc := range []struct {
		name string
		edit func(r *runspec.SandboxRequest)
		want string // "refused", "warning" or "ok"
	}{
		{"the run's own folders", func(*runspec.SandboxRequest) {}, "ok"},
		{"working folder inside", func(r *runspec.SandboxRequest) { r.Workdir = other }, "refused"},
		{"extra folder inside", func(r *runspec.SandboxRequest) { r.ExtraDirs = []string{other} }, "refused"},
		{"allowed through a link", func(r *runspec.SandboxRequest) { r.Config.AllowPaths = []string{link + ":rw"} }, "refused"},
		{"CLI folder inside", func(r *runspec.SandboxRequest) { r.Env = append(r.Env, "CLAUDE_CONFIG_DIR="+other) }, "refused"},
		{"allowed as typed", func(r *runspec.SandboxRequest) { r.Config.AllowPaths = []string{other} }, "warning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			req.Env = slices.Clone(base.Env)
			tc.edit(&req)
			s, err := w.Wrap(req)
			got := "ok"
			switch {
			case err != nil && strings.Contains(err.Error(), "inside the relay's data folder"):
				got = "refused"
			case err != nil:
				t.Fatalf("wrap: %v", err)
			case strings.Contains(s.Log, "lies inside the relay's data folder"):
				got = "warning"
			}
			if got != tc.want {
				t.Errorf("got %s, want %s: %v; log: %s", got, tc.want, err, s.Log)
			}
		})
	}
}
