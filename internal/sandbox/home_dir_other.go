//go:build !linux

package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// dir is an open folder of a CLI home (CLI homes of their own are made on
// Linux only; elsewhere this serves RemoveHome and the tests): an os.Root,
// so no link is followed.
type dir struct {
	r *os.Root
}

// openDir opens the folder path.
func openDir(path string) (*dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &dir{r: r}, nil
}

// Close closes d.
func (d *dir) Close() error { return d.r.Close() }

// path is the path of d's entry name, for messages.
func (d *dir) path(name string) string { return filepath.Join(d.r.Name(), name) }

// sub opens d's folder name.
func (d *dir) sub(name string) (*dir, error) {
	r, err := d.r.OpenRoot(name)
	if errors.Is(err, os.ErrPermission) {
		if err = d.r.Chmod(name, 0o700); err == nil {
			r, err = d.r.OpenRoot(name)
		}
	}
	if err != nil {
		return nil, err
	}
	return &dir{r: r}, nil
}

// root is d as an os.Root.
func (d *dir) root() (*os.Root, error) { return d.r.OpenRoot(".") }

// stat reports d's entry name (not following a link).
func (d *dir) stat(name string) (entry, error) {
	fi, err := d.r.Lstat(name)
	if err != nil {
		return entry{}, err
	}
	e := entry{mode: fs.ModeIrregular, links: 1, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	switch {
	case fi.Mode().IsRegular():
		e.mode = 0
	case fi.IsDir():
		e.mode = fs.ModeDir
	}
	return e, nil
}

// mkdir makes the folder name in d.
func (d *dir) mkdir(name string) error { return d.r.Mkdir(name, 0o700) }

// moveTo moves d's entry name into the folder to, under the same name.
func (d *dir) moveTo(name string, to *dir) error {
	return os.Rename(d.path(name), to.path(name))
}

// rename renames d's entry name to newName (fs.ErrExist when newName is
// taken).
func (d *dir) rename(name, newName string) error {
	if _, err := d.r.Lstat(newName); err == nil {
		return fs.ErrExist
	}
	return d.r.Rename(name, newName)
}

// removeEmpty removes d's folder name when it is empty.
func (d *dir) removeEmpty(name string) error { return d.r.Remove(name) }

// remove removes d's entry name when it is not a folder, or when it is an
// empty one; a missing entry is no error.
func (d *dir) remove(name string) error {
	if err := d.r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// names calls fn with each batch of the names in d, from its start, until
// it returns false.
func (d *dir) names(fn func([]string) bool) error {
	f, err := d.r.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		if !fn(names) || err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// removeAll removes d's entry name with what it holds, never following a
// link; a folder a run made unwritable is made writable first. b is
// spent once (the removal itself is not bounded here).
func (d *dir) removeAll(name string, b *budget) error {
	if err := b.spend(); err != nil {
		return err
	}
	err := d.r.RemoveAll(name)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return err
	}
	writable(d, name, 0)
	return d.r.RemoveAll(name)
}

// writable gives the owner every right on the folder name of d and the
// folders in it, down to maxOpenDepth.
func writable(d *dir, name string, depth int) {
	if mode, err := d.lstat(name); err != nil || !mode.IsDir() {
		return
	}
	if err := d.r.Chmod(name, 0o700); err != nil || depth >= maxOpenDepth {
		return
	}
	c, err := d.sub(name)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.names(func(names []string) bool {
		for _, n := range names {
			writable(c, n, depth+1)
		}
		return true
	})
}
