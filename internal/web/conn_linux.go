package web

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the other end of the connection has closed
// it (or at least its sending side: net/http takes that as the caller gone
// too), asking poll(2) for POLLRDHUP without waiting or reading.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	_ = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		closed = err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return closed
}
