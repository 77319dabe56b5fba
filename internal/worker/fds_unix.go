//go:build unix

package worker

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// A run inherits standard input, output and error and nothing else of the
// relay: a descriptor the relay itself inherited open (`serve 9<secret`, a
// service manager's or a desktop session's leftovers) would otherwise
// reach the CLI, and through it a sandboxed run would read what its rules
// refuse by path. Go opens its own descriptors close-on-exec and passes a
// child only what exec.Cmd names; anything else open in the relay is
// marked close-on-exec before each run starts (inheritStdioOnly). The
// sandbox child does the same before it becomes the CLI.

// markListed marks close-on-exec every descriptor above standard error
// that dir (the process's own descriptor folder) lists.
func markListed(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list the relay's open descriptors: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}
