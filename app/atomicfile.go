package app

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is ReadSmallFile's refusal of a path that is no regular
// file (a FIFO, a device, a folder).
var ErrNotRegular = errors.New("not a regular file")

// ErrLink is ReadSmallFile's refusal of a path that is a symbolic link.
var ErrLink = errors.New("a symbolic link")

// ReadSmallFile reads at most limit bytes of the regular file at path
// without blocking on, or following, what is planted there instead (a run
// may swap a file it made): it opens without waiting for a FIFO's writer,
// refuses anything but a regular file (ErrNotRegular), and refuses a link,
// or a path swapped for another file while it was opened (ErrLink). A
// missing file is os.ErrNotExist, as os.ReadFile says.
func ReadSmallFile(path string, limit int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrLink)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(st, got) {
		return nil, fmt.Errorf("%s: %w", path, cmp.Or(err, ErrLink))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// WriteFileAtomic replaces path with b (mode 0600) by writing a new
// sibling file of a name of its own and renaming it over path, so a reader
// never sees half a file, and nothing planted beside path (a FIFO, a link)
// is opened; what names the file in errors.
func WriteFileAtomic(path string, b []byte, what string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// WriteJSONAtomic writes v as indented JSON to path with WriteFileAtomic.
func WriteJSONAtomic(path string, v any, what string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	return WriteFileAtomic(path, b, what)
}
