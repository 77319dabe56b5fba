package sandbox_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"golang.org/x/sys/unix"
)

// socketProbeEnv makes the test binary the socket probe (socketProbe)
// instead of running the tests.
const socketProbeEnv = "CROSSCHAT_TEST_SOCKET_PROBE"

func init() {
	if os.Getenv(socketProbeEnv) == "1" {
		socketProbe()
		os.Exit(0)
	}
}

// socketProbe tries each way to a Unix socket and prints "name ok" or
// "name denied", and for a refusal "name-errno ERROR".
func socketProbe() {
	report := func(name string, err error) {
		var errno unix.Errno
		if errors.As(err, &errno) {
			err = errno
		}
		if err != nil {
			fmt.Printf("%s denied\n%s-errno %v\n", name, name, err)
			return
		}
		fmt.Printf("%s ok\n", name)
	}
	for _, name := range []string{"connect-tmp", "connect-home"} {
		c, err := net.Dial("unix", os.Getenv(strings.ToUpper(strings.TrimPrefix(name, "connect-"))+"_SOCKET"))
		if err == nil {
			_ = c.Close()
		}
		report(name, err)
	}
	report("socketpair", func() error {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if _, err := unix.Write(fds[0], []byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if n, err := unix.Read(fds[1], buf); err != nil || string(buf[:n]) != "ping" {
			return fmt.Errorf("read %q: %v", buf[:n], err)
		}
		return nil
	}())
	report("tcp-listen", func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			_ = l.Close()
		}
		return err
	}())
	_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
	report("keyctl", err)
	var params [120]byte // struct io_uring_params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
	if errno == 0 {
		_ = unix.Close(int(fd))
		report("io-uring", nil)
	} else {
		report("io-uring", errno)
	}
}

// listenUnix listens on a Unix socket at path until the test ends.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
}

// Ensure a child in the sandbox, and what it starts through a shell, cannot
// connect to a listening Unix socket by path (one in a temporary folder,
// one under the home folder: the D-Bus session bus, an SSH agent, Docker's
// socket alike), as creating an AF_UNIX socket is refused with EPERM, nor
// set up io_uring, nor reach the kernel's keyrings (keyctl); while it still makes a socketpair, listens on TCP and
// runs a shell pipeline. Without the sandbox it connects (so the test can
// fail).
func TestUnixSocketsInSandbox(t *testing.T) {
	self := landlockSelf(t)
	if !sandbox.Seccomp() {
		t.Skip("this kernel has no seccomp filter")
	}
	refused := []string{"connect-tmp", "connect-home"}
	allowed := []string{"socketpair", "tcp-listen", "pipeline"}
	// The probe runs in a pipeline of the sandboxed shell: the filter holds
	// across exec and fork.
	script := `"$PROBE" | cat; printf 'b\na\n' | sort | head -n 1 | sed 's/^a$/pipeline ok/'`
	for _, sandboxed := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[sandboxed]
		t.Run(name, func(t *testing.T) {
			home, data, work, run, _ := layout(t)
			tmpSocket := filepath.Join(t.TempDir(), "agent.sock")
			homeSocket := filepath.Join(home, ".ssh", "agent.sock")
			listenUnix(t, tmpSocket)
			listenUnix(t, homeSocket)
			env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "PROBE=" + self, socketProbeEnv + "=1",
				"TMP_SOCKET=" + tmpSocket, "HOME_SOCKET=" + homeSocket}
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn, AllowPaths: []string{filepath.Dir(self) + ":ro"}},
				Program: "/bin/sh", Args: []string{"-c", script},
				Env: env, Workdir: work, RunDir: run,
			}
			got := runProbe(t, sandbox.Wrapper{Self: self, Protected: []string{data}}, sandboxed, req)
			wantProbe(t, got, allowed, "ok")
			if !sandboxed {
				wantProbe(t, got, refused, "ok")
				t.Logf("io_uring without the sandbox: %s; keyctl: %s", got["io-uring"], got["keyctl"])
				return
			}
			wantProbe(t, got, append(refused, "io-uring", "keyctl"), "denied")
			for _, k := range append(refused, "io-uring", "keyctl") {
				if got[k+"-errno"] != unix.EPERM.Error() {
					t.Errorf("%s refused with %q, want EPERM\n%s", k, got[k+"-errno"], got[""])
				}
			}
		})
	}
}
