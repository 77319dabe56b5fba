package worker

import "golang.org/x/sys/unix"

// inheritStdioOnly marks every descriptor of the relay above standard
// error close-on-exec (see markListed), all at once with close_range (Linux
// 5.11), else one by one as /proc/self/fd lists them.
func inheritStdioOnly() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	return markListed("/proc/self/fd")
}
