//go:build unix && !linux

package web

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the other end of the connection has closed
// it: a peek that reads nothing and does not wait finds its end (bytes
// still unread, a pipelined request, hide the close until they are read).
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = n == 0 && err == nil
	})
	return closed
}
