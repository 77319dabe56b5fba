package plantguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// How a folder is walked for the entries it keeps: in breadth, following
// no link, bounded (maxWalked entries, maxBytes of kept files).

// walker walks a folder for its kept entries.
type walker struct {
	root  *os.Root
	n     int
	bytes int64
}

// walk records the kept entries under dir (a real folder, "."), folder
// by folder in breadth: past maxWalked entries what is left unchecked is
// the deepest, never a folder's own .git or settings above a crowded
// subfolder.
func (w *walker) walk(dir string, s *Snapshot) error {
	for queue := []string{dir}; len(queue) > 0 && w.n < maxWalked; queue = queue[1:] {
		next, err := w.walkOne(queue[0], s)
		if err != nil {
			return err
		}
		queue = append(queue, next...)
	}
	return nil
}

// walkOne records the kept entries of the folder dir and returns its
// other folders, to walk next.
func (w *walker) walkOne(dir string, s *Snapshot) (next []string, err error) {
	names, err := w.list(dir)
	if err != nil {
		return nil, nil // a folder that cannot be read holds nothing to keep
	}
	for _, e := range names {
		if w.n >= maxWalked {
			return next, nil
		}
		w.n++
		p := join(dir, e.Name())
		switch {
		case e.Name() == ".git":
			s.roots = append(s.roots, p)
			if err := w.record(p, s, false); err != nil {
				return nil, err
			}
			if e.IsDir() {
				for _, k := range gitKept {
					s.roots = append(s.roots, join(p, k))
					if err := w.record(join(p, k), s, true); err != nil {
						return nil, err
					}
				}
				// The repositories of its submodules and the configuration
				// of its worktrees, which git runs code from too.
				if err := w.gitDirs(join(p, "modules"), s, 0); err != nil {
					return nil, err
				}
				if err := w.worktrees(join(p, "worktrees"), s); err != nil {
					return nil, err
				}
				// Hooks kept in the worktree (core.hooksPath: .githooks,
				// husky's .husky): git runs them as it runs .git/hooks.
				if h := w.hooksPath(dir, join(p, "config")); h != "" && !slices.Contains(s.roots, h) {
					s.roots = append(s.roots, h)
					if err := w.record(h, s, true); err != nil {
						return nil, err
					}
				}
			}
		case settings[e.Name()]:
			s.roots = append(s.roots, p)
			if err := w.record(p, s, true); err != nil {
				return nil, err
			}
		case e.IsDir():
			next = append(next, p)
		}
	}
	return next, nil
}

// maxModuleDepth bounds the nesting of submodules' repositories followed.
const maxModuleDepth = 8

// gitDirs records, as roots, the kept entries of every repository under
// dir (a .git folder's modules: one repository per submodule, named by its
// path, with its own modules), to a depth of maxModuleDepth.
func (w *walker) gitDirs(dir string, s *Snapshot, depth int) error {
	if depth > maxModuleDepth {
		return nil
	}
	names, err := w.list(dir)
	if err != nil {
		return nil
	}
	for _, e := range names {
		if !e.IsDir() || w.n >= maxWalked {
			continue
		}
		w.n++
		d := join(dir, e.Name())
		if _, err := w.root.Lstat(join(d, "HEAD")); err != nil {
			// Not a repository: a folder of a submodule's path ("libs/a").
			if err := w.gitDirs(d, s, depth+1); err != nil {
				return err
			}
			continue
		}
		for _, k := range gitKept {
			s.roots = append(s.roots, join(d, k))
			if err := w.record(join(d, k), s, true); err != nil {
				return err
			}
		}
		if err := w.gitDirs(join(d, "modules"), s, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// worktrees records, as roots, the configuration of each worktree of a
// repository (its .git's worktrees, extensions.worktreeConfig).
func (w *walker) worktrees(dir string, s *Snapshot) error {
	names, err := w.list(dir)
	if err != nil {
		return nil
	}
	for _, e := range names {
		if e.IsDir() {
			r := join(join(dir, e.Name()), "config.worktree")
			s.roots = append(s.roots, r)
			if err := w.record(r, s, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// hooksPath is the folder the repository whose configuration file is cfg
// (in the worktree dir) takes its hooks from (core.hooksPath), as a path
// of the folder; "" when it sets none or one outside the folder.
func (w *walker) hooksPath(dir, cfg string) string {
	data, err := w.root.ReadFile(cfg)
	if err != nil {
		return ""
	}
	h := gitValue(data, "core", "hookspath")
	if h == "" {
		return ""
	}
	if path.IsAbs(h) {
		rel, ok := strings.CutPrefix(path.Clean(h), path.Clean(w.root.Name())+"/")
		if !ok {
			return ""
		}
		h = rel
	} else {
		h = path.Join(dir, h)
	}
	if h = path.Clean(h); h == "." || h == ".." || strings.HasPrefix(h, "../") {
		return ""
	}
	return h
}

// list reads the entries of the folder dir.
func (w *walker) list(dir string) ([]fs.DirEntry, error) {
	f, err := w.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// record records p (when it exists) and, with deep, everything under it.
func (w *walker) record(p string, s *Snapshot, deep bool) error {
	fi, err := w.root.Lstat(p)
	if err != nil {
		return nil // none: its absence is what is kept
	}
	e := entry{typ: fi.Mode().Type(), perm: fi.Mode().Perm(), id: idOf(fi)}
	switch {
	case fi.Mode().IsRegular():
		if w.bytes += fi.Size(); w.bytes > maxBytes {
			return fmt.Errorf("%s: %w", s.folder, ErrTooLarge)
		}
		if e.data, err = w.root.ReadFile(p); err != nil {
			return fmt.Errorf("keep %s: %w", path.Join(s.folder, p), err)
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.link, err = w.root.Readlink(p); err != nil {
			return fmt.Errorf("keep %s: %w", path.Join(s.folder, p), err)
		}
	}
	s.entries[p] = e
	if !deep || !fi.IsDir() {
		return nil
	}
	names, err := w.list(p)
	if err != nil {
		return fmt.Errorf("keep %s: %w", path.Join(s.folder, p), err)
	}
	for _, n := range names {
		if w.n++; w.n > maxWalked+maxWalked/2 {
			return fmt.Errorf("%s: %w (more than %d entries)", s.folder, ErrTooLarge, maxWalked/2)
		}
		if err := w.record(join(p, n.Name()), s, true); err != nil {
			return err
		}
	}
	return nil
}

// walkAfter is walk without the byte bound (and no error for it).
func (w *walker) walkAfter(dir string, s *Snapshot) error {
	err := w.walk(dir, s)
	if errors.Is(err, ErrTooLarge) {
		return nil
	}
	return err
}
