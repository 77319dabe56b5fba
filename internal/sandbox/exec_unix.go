//go:build unix

package sandbox

import "syscall"

// execve replaces this process with the program.
func execve(program string, argv, env []string) error {
	return syscall.Exec(program, argv, env)
}
