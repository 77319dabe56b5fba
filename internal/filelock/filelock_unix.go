//go:build unix

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// noFollow makes Lock's open fail on a symbolic link (ELOOP).
const noFollow = unix.O_NOFOLLOW

// isLink reports whether err is the open's refusal of a symbolic link.
func isLink(err error) bool { return errors.Is(err, unix.ELOOP) }

// lock takes flock's exclusive lock without blocking. flock locks belong to
// the open file, so a second Lock in this process conflicts as another
// process's would.
func lock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return ErrLocked
		}
		return err
	}
}

func unlock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
