// Package filelock holds an exclusive lock on a file, taken from the
// operating system without waiting: flock on Linux and macOS, LockFileEx on
// Windows. The lock lasts until Unlock or until the process ends, however it
// ends: the system drops a dead process's locks, so a crash leaves no stale
// lock to clean up. The relay holds one on its data folder while it serves,
// and a change to the project store one on the store.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// ErrLocked is the error Lock wraps when another open file holds the lock:
// another process, or this one through another Lock.
var ErrLocked = errors.New("already locked")

// File is a lock held on a file.
type File struct {
	f         *os.File
	once      sync.Once
	unlockErr error
}

// Lock opens the file at path (created owner-only when missing) and locks
// it exclusively, or fails at once with ErrLocked when it is locked. The
// file's content is not used. The file descriptor is not inherited by child
// processes (Go opens files close-on-exec), so a child that outlives the
// process does not keep the lock. The lock file must be a regular file:
// a symbolic link in its place is not followed (on Unix), so it can make
// the process neither create nor hold a file elsewhere, and a FIFO or
// device is refused.
func Lock(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if isLink(err) {
		return nil, fmt.Errorf("lock %s: it is a symbolic link, not a lock file: remove it", path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("it is not a regular file (%s): remove it", fi.Mode().Type())
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &File{f: f}, nil
}

// Unlock releases the lock and closes the file; later calls return what
// the first did. The file stays: removing it would let a second process
// lock the removed file while a third creates and locks a new one.
func (l *File) Unlock() error {
	l.once.Do(func() {
		if err := errors.Join(unlock(l.f), l.f.Close()); err != nil {
			l.unlockErr = fmt.Errorf("unlock %s: %w", l.f.Name(), err)
		}
	})
	return l.unlockErr
}
