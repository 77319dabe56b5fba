//go:build unix

package worker

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a symbolic link
// at its end (errNotRegular then) and without blocking on a pipe.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
		return nil, errNotRegular
	}
	return f, err
}

// createNoFollow creates path for writing; it fails when anything, a
// symbolic link included, is already there.
func createNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}

// links is the file's number of hard links (1 when unknown).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
