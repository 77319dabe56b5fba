package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// pruneRunFolders deletes run folders in root (<data-dir>/runs) untouched
// for longer than keep, except those of the running tasks. A run removes
// its own folder when it ends; what stays behind is what that removal (or
// crash recovery) could not delete, for example a tree the agent made
// read-only. It returns how many folders it removed.
func pruneRunFolders(root string, keep time.Duration, now time.Time, running map[string]bool) (int, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("prune run folders: %w", err)
	}
	var (
		n    int
		errs []error
	)
	for _, e := range entries {
		if running[e.Name()] {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < keep {
			continue
		}
		if err := removeTree(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// removeTree removes path, first making its folders writable so a tree
// the agent made read-only goes too. It never follows symlinks.
func removeTree(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700) // best effort; RemoveAll below reports what is left
		}
		return nil
	})
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove run folder %s: %w", path, err)
	}
	return nil
}
