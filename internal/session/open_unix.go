//go:build unix

package session

import "syscall"

// openFlags keep a transcript read from following a symbolic link or
// waiting on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
