//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// noFollow is 0: Windows has no O_NOFOLLOW (making a symbolic link there
// takes an administrator or developer mode).
const noFollow = 0

// isLink is false: nothing refuses a link on Windows (noFollow).
func isLink(error) bool { return false }

// allBytes locks the file's whole range: the lock is on the file, not on
// a part of its content.
const allBytes = ^uint32(0)

// lock takes LockFileEx's exclusive lock without waiting. Locks belong to
// the file handle, so a second Lock in this process conflicts as another
// process's would.
func lock(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, allBytes, allBytes, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrLocked
	}
	return err
}

func unlock(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, allBytes, allBytes, new(windows.Overlapped))
}
