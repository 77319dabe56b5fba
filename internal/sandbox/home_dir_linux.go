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

// openDir opens the folder path (whose parent a run cannot write), as
// sub does an entry of a folder.
func openDir(path string) (*dir, error) {
	return (&dir{fd: unix.AT_FDCWD}).sub(path)
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

// stat reports d's entry name (not following a link).
func (d *dir) stat(name string) (entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return entry{}, fs.ErrNotExist
		}
		return entry{}, &fs.PathError{Op: "lstat", Path: d.path(name), Err: err}
	}
	e := entry{mode: fs.ModeIrregular, links: uint64(st.Nlink), size: st.Size, mtime: st.Mtim.Nano()}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.mode = 0
	case unix.S_IFDIR:
		e.mode = fs.ModeDir
	}
	return e, nil
}

// mkdir makes the folder name in d.
func (d *dir) mkdir(name string) error {
	if err := unix.Mkdirat(d.fd, name, 0o700); err != nil {
		if err == unix.EEXIST {
			return fs.ErrExist
		}
		return &fs.PathError{Op: "mkdir", Path: d.path(name), Err: err}
	}
	return nil
}

// moveTo moves d's entry name into the folder to, under the same name,
// replacing nothing.
func (d *dir) moveTo(name string, to *dir) error {
	if err := unix.Renameat2(d.fd, name, to.fd, name, unix.RENAME_NOREPLACE); err != nil {
		return &os.LinkError{Op: "rename", Old: d.path(name), New: to.path(name), Err: err}
	}
	return nil
}

// rename renames d's entry name to newName, replacing nothing (fs.ErrExist
// when newName is taken).
func (d *dir) rename(name, newName string) error {
	if err := unix.Renameat2(d.fd, name, d.fd, newName, unix.RENAME_NOREPLACE); err != nil {
		if err == unix.EEXIST {
			return fs.ErrExist
		}
		if err == unix.ENOENT {
			return fs.ErrNotExist
		}
		return &os.LinkError{Op: "rename", Old: d.path(name), New: d.path(newName), Err: err}
	}
	return nil
}

// removeEmpty removes d's folder name when it is empty.
func (d *dir) removeEmpty(name string) error {
	return unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
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

// names calls fn with each batch of the names in d, from its start, until
// it returns false; fn may remove them.
func (d *dir) names(fn func([]string) bool) error {
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
		if !fn(names) {
			return nil
		}
	}
}

// deepSeq tells apart the names given to folders moved up by removeAll.
var deepSeq atomic.Int64

// removeAll removes d's entry name with what it holds, never following a
// link, with a bounded number of files open however deep a run nested its
// folders: a folder maxOpenDepth down is moved up into d under a name of
// its own and removed after. Folders a run made unwritable or
// inaccessible are given their owner's rights first. Each entry spends
// from b; a folder still being written (maxClearPasses) or past b fails.
func (d *dir) removeAll(name string, b *budget) error {
	queue := []string{name}
	var errs []error
	for done := 0; len(queue) > 0 && done <= maxDeepMoves; done++ {
		if b != nil && b.left < 0 {
			return errors.Join(append(errs, fmt.Errorf("remove %s: %w", d.path(name), errBudget))...)
		}
		n := queue[0]
		queue = queue[1:]
		err := d.removeTree(d, n, 0, b, func(parent *dir, child string) error {
			moved := fmt.Sprintf("%s%d-%d", deepPrefix, os.Getpid(), deepSeq.Add(1))
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
func (d *dir) removeTree(parent *dir, name string, depth int, b *budget, moveUp func(*dir, string) error) error {
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
	for pass := 1; ; pass++ {
		removed := 0
		var perr []error
		rerr := c.names(func(names []string) bool {
			for _, n := range names {
				if err := b.spend(); err != nil {
					perr = append(perr, err)
					return false
				}
				var err error
				if depth+1 >= maxOpenDepth {
					if mode, lerr := c.lstat(n); lerr == nil && mode.IsDir() {
						err = moveUp(c, n)
					} else {
						err = c.remove(n)
					}
				} else {
					err = d.removeTree(c, n, depth+1, b, moveUp)
				}
				if err != nil {
					perr = append(perr, err)
					if errors.Is(err, errBudget) {
						return false
					}
				} else {
					removed++
				}
			}
			return true
		})
		errs = append(perr, rerr)
		if removed == 0 || rerr != nil || (b != nil && b.left < 0) {
			break
		}
		if pass == maxClearPasses {
			// Still written as it is removed: by a process left from a run.
			errs = append(errs, fmt.Errorf("remove %s: its last of %d readings still removed entries", c.name, maxClearPasses))
			break
		}
	}
	c.Close()
	if err := unix.Unlinkat(parent.fd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		errs = append(errs, &fs.PathError{Op: "remove", Path: parent.path(name), Err: err})
	}
	return errors.Join(errs...)
}
