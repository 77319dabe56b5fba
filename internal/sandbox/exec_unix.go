//go:build unix

package sandbox

import "syscall"

// execve replaces this process with the program (on Linux, only where the
// kernel cannot make the process a subreaper).
func execve(program string, argv, env []string) error {
	return syscall.Exec(program, argv, env)
}
