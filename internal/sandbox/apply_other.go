//go:build !linux

package sandbox

// ABI is the kernel's Landlock ABI version: 0, as there is no Landlock here.
func ABI() int { return 0 }

// restrict cannot confine a process outside Linux (macOS runs go through
// sandbox-exec instead; see Wrapper.Wrap).
func restrict(Rules) error { return errNotEnforced }

// Seccomp reports whether the kernel takes the socket filter: never here.
func Seccomp() bool { return false }
