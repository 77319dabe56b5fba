//go:build unix && !linux

package worker

// inheritStdioOnly marks every descriptor of the relay above standard
// error close-on-exec (see markListed), as /dev/fd lists them.
func inheritStdioOnly() error { return markListed("/dev/fd") }
