package worker

import (
	"io/fs"
	"os"
)

// openNoFollow opens path for reading, refusing a symbolic link or other
// reparse point at its end (errNotRegular). Windows has no O_NOFOLLOW:
// the path is checked with Lstat first.
func openNoFollow(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	return os.Open(path)
}

// createNoFollow creates path for writing; it fails when anything is
// already there.
func createNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// links is the file's number of hard links (1: not known here).
func links(fs.FileInfo) uint64 { return 1 }
