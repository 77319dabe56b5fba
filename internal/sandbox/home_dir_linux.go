package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// dir is an open folder of a CLI home, held by its file descriptor: every
// entry in it is reached relative to it, so nothing a run planted there
// (a link, a folder swapped for a FIFO) is followed or opened.
type dir struct {
	fd   int
	name string // its path, for messages
}

// dirFlags open a folder and nothing else: a link (O_NOFOLLOW) or
// anything that is not a folder (a FIFO, which would block an open
// without them) fails at once.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// openDir opens the folder path (whose parent a run cannot write), given
// its owner's rights back when a run took them away.
func openDir(path string) (*dir, error) {
	fd, err := unix.Open(path, dirFlags, 0)
	if err == unix.EACCES {
		if err = os.Chmod(path, 0o700); err == nil {
			fd, err = unix.Open(path, dirFlags, 0)
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	ownerWritable(fd)
	return &dir{fd: fd, name: path}, nil
}

// ownerWritable gives the owner every right on the open folder fd, when a
// run took some away (Landlock does not govern modes), so its entries can
// be removed.
func ownerWritable(fd int) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&0o700 != 0o700 {
		_ = unix.Fchmod(fd, 0o700)
	}
}

// Close closes d.
func (d *dir) Close() error { return unix.Close(d.fd) }

// path is the path of d's entry name, for messages.
func (d *dir) path(name string) string { return filepath.Join(d.name, name) }

// sub opens d's folder name, never following a link: a folder a run made
// inaccessible (chmod 000) or unwritable is given its owner's rights back.
func (d *dir) sub(name string) (*dir, error) {
	fd, err := unix.Openat(d.fd, name, dirFlags, 0)
	if err == unix.EACCES {
		if err = d.ownerRights(name); err == nil {
			fd, err = unix.Openat(d.fd, name, dirFlags, 0)
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path(name), Err: err}
	}
	ownerWritable(fd)
	return &dir{fd: fd, name: d.path(name)}, nil
}

// ownerRights gives the owner every right on d's folder name: through an
// O_PATH descriptor of it (never a link), so no file a link leads to is
// changed.
func (d *dir) ownerRights(name string) error {
	fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o700)
}

// root is d as an os.Root (the same folder, not a path looked up again).
func (d *dir) root() (*os.Root, error) {
	return os.OpenRoot("/proc/self/fd/" + strconv.Itoa(d.fd))
}

// lstat reports the type of d's entry name (not following a link).
func (d *dir) lstat(name string) (fs.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return 0, fs.ErrNotExist
		}
		return 0, &fs.PathError{Op: "lstat", Path: d.path(name), Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0, nil
	case unix.S_IFDIR:
		return fs.ModeDir, nil
	}
	return fs.ModeIrregular, nil
}

// remove removes d's entry name when it is not a folder, or when it is an
// empty one; a missing entry is no error.
func (d *dir) remove(name string) error {
	err := unix.Unlinkat(d.fd, name, 0)
	if err == unix.EISDIR {
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	}
	if err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "remove", Path: d.path(name), Err: err}
	}
	return nil
}

// names calls fn with each batch of the names in d, from its start; fn
// may remove them.
func (d *dir) names(fn func([]string)) error {
	if _, err := unix.Seek(d.fd, 0, 0); err != nil {
		return &fs.PathError{Op: "seek", Path: d.name, Err: err}
	}
	buf := make([]byte, 8192)
	for {
		n, err := unix.ReadDirent(d.fd, buf)
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: d.name, Err: err}
		}
		if n <= 0 {
			return nil
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		fn(names)
	}
}

// deepSeq tells apart the names given to folders moved up by removeAll.
var deepSeq atomic.Int64

// removeAll removes d's entry name with what it holds, never following a
// link, with a bounded number of files open however deep a run nested its
// folders: a folder maxOpenDepth down is moved up into d under a name of
// its own and removed after. Folders a run made unwritable or
// inaccessible are given their owner's rights first.
func (d *dir) removeAll(name string) error {
	queue := []string{name}
	var errs []error
	for done := 0; len(queue) > 0 && done <= maxDeepMoves; done++ {
		n := queue[0]
		queue = queue[1:]
		err := d.removeTree(d, n, 0, func(parent *dir, child string) error {
			moved := fmt.Sprintf(".crosschat-deep-%d-%d", os.Getpid(), deepSeq.Add(1))
			if err := unix.Renameat(parent.fd, child, d.fd, moved); err != nil {
				return &os.LinkError{Op: "rename", Old: parent.path(child), New: d.path(moved), Err: err}
			}
			queue = append(queue, moved)
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(queue) > 0 {
		errs = append(errs, fmt.Errorf("remove %s: more than %d folders nested", d.path(name), maxDeepMoves*maxOpenDepth))
	}
	return errors.Join(errs...)
}

// removeTree removes parent's entry name; a folder depth down is emptied
// first, its folders maxOpenDepth down handed to moveUp.
func (d *dir) removeTree(parent *dir, name string, depth int, moveUp func(*dir, string) error) error {
	if err := unix.Unlinkat(parent.fd, name, 0); err != unix.EISDIR {
		if err != nil && err != unix.ENOENT {
			return &fs.PathError{Op: "remove", Path: parent.path(name), Err: err}
		}
		return nil
	}
	if err := unix.Unlinkat(parent.fd, name, unix.AT_REMOVEDIR); err == nil || err == unix.ENOENT {
		return nil
	}
	c, err := parent.sub(name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	var errs []error
	// Pass after pass: entries removed while the folder is read may hide
	// others from that reading.
	for pass := 0; pass < maxClearPasses; pass++ {
		removed := 0
		var perr []error
		rerr := c.names(func(names []string) {
			for _, n := range names {
				var err error
				if depth+1 >= maxOpenDepth {
					if mode, lerr := c.lstat(n); lerr == nil && mode.IsDir() {
						err = moveUp(c, n)
					} else {
						err = c.remove(n)
					}
				} else {
					err = d.removeTree(c, n, depth+1, moveUp)
				}
				if err != nil {
					perr = append(perr, err)
				} else {
					removed++
				}
			}
		})
		errs = append(perr, rerr)
		if removed == 0 || rerr != nil {
			break
		}
	}
	c.Close()
	if err := unix.Unlinkat(parent.fd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		errs = append(errs, &fs.PathError{Op: "remove", Path: parent.path(name), Err: err})
	}
	return errors.Join(errs...)
}
