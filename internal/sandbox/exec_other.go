//go:build !linux

package sandbox

import "io"

// superviseRun confines this process and replaces it by the command (on
// macOS the verb is not used; Windows runs are not sandboxed): only Linux
// keeps the sandbox child as the run's reaper.
func superviseRun(inv invocation, stderr io.Writer) int {
	return confineAndStart(inv.rules, inv.cmd, stderr)
}
