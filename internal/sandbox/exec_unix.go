//go:build unix

package sandbox

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// execve replaces this process with the program (on Linux, only where the
// kernel cannot make the process a subreaper), which inherits only
// standard input, output and error: every other descriptor this process
// has (one the relay inherited open, `serve 9<secret`, and passed on) is
// marked close-on-exec first, so the CLI cannot read through one what its
// rules refuse by path.
func execve(program string, argv, env []string) error {
	inheritStdioOnly()
	return syscall.Exec(program, argv, env)
}

// inheritStdioOnly marks every descriptor above standard error
// close-on-exec, as the process's descriptor folder lists them.
func inheritStdioOnly() {
	dir := "/dev/fd"
	if runtime.GOOS == "linux" {
		dir = "/proc/self/fd"
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
