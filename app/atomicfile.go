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

// ReadSmallFile reads at most limit bytes of the regular file at path
// without blocking on what is planted there instead: it opens without
// waiting for a FIFO's writer and refuses anything but a regular file
// (ErrNotRegular). A missing file is os.ErrNotExist, as os.ReadFile says.
func ReadSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, cmp.Or(err, ErrNotRegular))
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
