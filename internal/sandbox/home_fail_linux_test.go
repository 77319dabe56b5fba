package sandbox_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"golang.org/x/sys/unix"
)

// sharedEnv names, in a test re-run unprivileged (unprivileged), the
// folder the privileged test made for it.
const sharedEnv = "CROSSCHAT_TEST_UNPRIVILEGED_SHARED"

// unprivileged reports whether the test runs as a user without root's
// rights over files, as the relay does (permissions bind it), and so may
// go on. As root it runs the test again as nobody instead (the test
// binary copied where nobody can run it, started with nobody's
// credentials, no tool needed, within a minute), with setup's folder
// shared (made by root, world-writable), fails as that run fails, and
// returns false. shared is "" when the test was not started that way.
func unprivileged(t *testing.T, setup func(shared string)) (shared string, ok bool) {
	t.Helper()
	if os.Getuid() != 0 {
		return os.Getenv(sharedEnv), true
	}
	dir, err := os.MkdirTemp("", "crosschat-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	shared = filepath.Join(dir, "shared")
	for _, d := range []string{dir, shared} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(shared)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test.bin")
	copyFile(t, self, bin, 0o755)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sharedEnv+"="+shared, "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("the test run as nobody: %v\n%s", err, out)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("the test run as nobody did not pass:\n%s", out)
	}
	return "", false
}

// copyFile copies from to to, made with perm.
func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// geminiHome prepares a Gemini worker's CLI home (as its first run does)
// and returns the wrapper, the request and the home.
func geminiHome(t *testing.T) (sandbox.Wrapper, runspec.SandboxRequest, string) {
	t.Helper()
	home, data, work, run := cliLayout(t)
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: "gemini", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
	}
	w := clearWrapper(data)
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("first wrap: %v", err)
	}
	return w, req, filepath.Join(w.Homes, "builder", "gemini")
}

// Ensure a run that takes the rights away from a folder of its CLI home
// (Landlock does not govern modes) does not make the next runs fail, nor
// keep what it planted there: a folder made read-only (the home, tmp,
// chats, one the run made), or inaccessible
// (chmod 000: the home, .gemini, tmp, a project's folder, its chats), is
// given back its owner's rights, so the session files in it are kept and
// the last home is removed (nothing is left aside in the worker's homes),
// and nothing planted (in each of those folders) is in the next run's
// home. Run unprivileged (as root, permissions bind nothing); without the
// fix-up the last home stays aside (or a session is lost), so the test
// can fail.
func TestCLIHomeLockedFolders(t *testing.T) {
	if _, ok := unprivileged(t, nil); !ok {
		return
	}
	const session = ".gemini/tmp/mine/chats/session-2026-12-03T17-37-0f83ac72.jsonl"
	planted := []string{".gemini/tmp/mine/memory/skills/evil/SKILL.md", ".gemini/tmp/mine/chats/sub/evil.md", "locked/inner/x.sh", ".gemini/evil.sh",
		".gemini/tmp/evil.sh", "evil.sh", ".gemini/tmp/mine/evil.sh", ".gemini/tmp/mine/chats/evil.sh"}
	for _, tt := range []struct {
		name, folder string
		mode         os.FileMode
	}{
		{"read-only folder", "locked/inner", 0o500},
		{"read-only home", ".", 0o500},
		{"read-only tmp", ".gemini/tmp", 0o500},
		{"read-only chats", ".gemini/tmp/mine/chats", 0o500},
		{"inaccessible home", ".", 0},
		{"inaccessible .gemini", ".gemini", 0},
		{"inaccessible tmp", ".gemini/tmp", 0},
		{"inaccessible project", ".gemini/tmp/mine", 0},
		{"inaccessible chats", ".gemini/tmp/mine/chats", 0},
		{"inaccessible memory", ".gemini/tmp/mine/memory", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, req, own := geminiHome(t)
			for _, rel := range planted {
				writeTestFile(t, filepath.Join(own, rel), "planted")
			}
			writeTestFile(t, filepath.Join(own, session), "transcript")
			if err := os.Chmod(filepath.Join(own, tt.folder), tt.mode); err != nil {
				t.Fatal(err)
			}
			// Left as the run left it if the test fails, removable still.
			t.Cleanup(func() { _ = os.Chmod(filepath.Join(own, tt.folder), 0o700) })
			if _, err := w.Wrap(req); err != nil {
				t.Fatalf("next wrap: %v", err)
			}
			for _, rel := range planted {
				if _, err := os.Lstat(filepath.Join(own, rel)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s is still in the next run's home: %v", rel, err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(own, session)); err != nil || string(b) != "transcript" {
				t.Errorf("the session was not kept: %q, %v", b, err)
			}
			if names := leftAside(t, filepath.Dir(own)); len(names) > 0 {
				t.Errorf("the last home was not removed: %v", names)
			}
		})
	}
}

// leftAside are the names of what is left aside in the worker's homes
// homes (homes moved aside, folders moved up).
func leftAside(t *testing.T, homes string) []string {
	t.Helper()
	ents, err := os.ReadDir(homes)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".crosschat-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// Ensure a run that nests folders in its CLI home deeper than the relay
// may hold files open does not make the clearing, nor the removal of the
// worker's homes, fail: both remove the tree with a bounded number of
// open files. Removing it with a file open per level, both fail with "too
// many open files", so the test can fail.
func TestCLIHomeDeepTree(t *testing.T) {
	w, req, own := geminiHome(t)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	const limit, depth = 256, 1000
	if old.Cur < limit {
		t.Skipf("the open-files limit is %d already", old.Cur)
	}
	nest := func(at string) {
		t.Helper()
		if err := os.MkdirAll(at, 0o700); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(at, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range depth {
			if err := unix.Mkdirat(fd, "d", 0o700); err != nil {
				t.Fatal(err)
			}
			next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				t.Fatal(err)
			}
			fd = next
		}
		unix.Close(fd)
	}
	nest(filepath.Join(own, "deep"))
	nest(filepath.Join(own, ".gemini", "tmp", "mine", "memory"))
	lim := old
	lim.Cur = limit
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &old) }()
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	for _, rel := range []string{"deep", ".gemini/tmp/mine"} {
		if _, err := os.Lstat(filepath.Join(own, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the next run's home: %v", rel, err)
		}
	}
	nest(filepath.Join(own, "deep"))
	if err := w.RemoveHome("builder"); err != nil {
		t.Fatalf("remove the homes: %v", err)
	}
	if _, err := os.Lstat(filepath.Dir(own)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worker's homes are still there: %v", err)
	}
}

// Ensure a CLI home that cannot be removed (here, a folder in it the
// relay's user cannot empty: root's, which the run moved in) does not
// make every later run fail: the run gets a new home, without what the
// run planted, what is left of the last one stays aside in the worker's
// homes, and the run's log says so with the cause. Run unprivileged;
// clearing the home in place, the next run's preparation fails, and
// without the warning the log says nothing, so the test can fail.
func TestCLIHomeMovedAsideWhenStuck(t *testing.T) {
	shared, ok := unprivileged(t, func(shared string) {
		// root's: an open folder holding a closed one holding a file.
		writeTestFile(t, filepath.Join(shared, "stuck", "closed", "f"), "x")
		for d, mode := range map[string]os.FileMode{"stuck": 0o777, "stuck/closed": 0o755} {
			if err := os.Chmod(filepath.Join(shared, d), mode); err != nil {
				t.Fatal(err)
			}
		}
	})
	if !ok {
		return
	}
	if shared == "" {
		t.Skip("needs a folder root made: run as root")
	}
	w, req, own := geminiHome(t)
	writeTestFile(t, filepath.Join(own, "evil.sh"), "planted")
	if err := os.Rename(filepath.Join(shared, "stuck"), filepath.Join(own, "stuck")); err != nil {
		t.Fatal(err)
	}
	sb, err := w.Wrap(req)
	if err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	if !sb.Warning || !strings.Contains(sb.Log, "last CLI home") || !strings.Contains(sb.Log, "permission denied") {
		t.Errorf("the run's log does not say the last home was left aside, and why: %s", sb.Log)
	}
	for _, rel := range []string{"stuck", "evil.sh"} {
		if _, err := os.Lstat(filepath.Join(own, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the next run's home: %v", rel, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(own, ".gemini", "settings.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the new home has not the user's settings: %v, %v", fi, err)
	}
	// Root's folder back to root's test, which removes it.
	ents, _ := os.ReadDir(filepath.Dir(own))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".crosschat-old-") {
			if err := os.Rename(filepath.Join(filepath.Dir(own), e.Name(), "stuck"), filepath.Join(shared, e.Name())); err != nil {
				t.Error(err)
			}
		}
	}
}
