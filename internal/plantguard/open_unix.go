//go:build unix

package plantguard

import "syscall"

// Flags of every open: a folder or file a process put in place of what
// was looked at (a FIFO) is never waited on, and a folder is opened as
// one or not at all.
const (
	openNonBlock  = syscall.O_NONBLOCK
	openDirectory = syscall.O_DIRECTORY
)
