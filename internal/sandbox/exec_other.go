//go:build !linux

package sandbox

// startProgram replaces this process with the program (on macOS the verb is
// not used; Windows runs are not sandboxed): it returns only on failure.
func startProgram(program string, argv, env []string) error {
	return execve(program, argv, env)
}

// onOwnThread runs f on the calling thread: only Linux confines a thread
// and supervises the command from another.
func onOwnThread(f func() int) int { return f() }
