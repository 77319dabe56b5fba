package plantguard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// How a folder is walked for the entries it keeps: in breadth, following
// no link, bounded (maxWalked entries, maxBytes of kept files).

// walker walks a folder for its kept entries.
type walker struct {
	root  *os.Root
	n     int
	bytes int64
	// before is, in the walk after the run, the snapshot taken before it:
	// a root too large to record is marked so (Snapshot.large) and the
	// walk goes on, and files are read only to compare them with it.
	before *Snapshot
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
	return w.followLinks(s)
}

// walkOne records the kept entries of the folder dir and returns its
// other folders, to walk next. What the folder keeps (its .git, its
// settings, the folder itself when git takes it for a repository's own)
// comes first, so no crowd of other entries hides it.
func (w *walker) walkOne(dir string, s *Snapshot) (next []string, err error) {
	names, err := w.list(dir)
	if err != nil {
		return nil, nil // a folder that cannot be read holds nothing to keep
	}
	if isGitDir(names) {
		// A folder holding HEAD with objects and refs (or a commondir)
		// is a repository's own folder to git, whatever its name: a
		// `git status` in it reads its configuration (core.worktree
		// gives it a working tree, core.fsmonitor runs).
		if err := w.gitDir(dir, dir, s); err != nil {
			return nil, err
		}
	}
	for _, e := range names {
		p := join(dir, e.Name())
		switch {
		case isGitName(e.Name()):
			w.n++
			if err := w.addRoot(p, s, false); err != nil {
				return nil, err
			}
			if e.IsDir() {
				if err := w.gitDir(p, dir, s); err != nil {
					return nil, err
				}
			}
		case isSettings(e.Name()):
			w.n++
			if err := w.addRoot(p, s, true); err != nil {
				return nil, err
			}
		}
	}
	for _, e := range names {
		if isGitName(e.Name()) || isSettings(e.Name()) {
			continue
		}
		if w.n >= maxWalked {
			return next, nil
		}
		w.n++
		if e.IsDir() {
			next = append(next, join(dir, e.Name()))
		}
	}
	return next, nil
}

// gitDir records the kept entries of the repository folder p (a .git, or
// a folder git takes for one) whose working tree is dir: its
// configuration, hooks and commondir, the files its configuration
// includes, the repositories of its submodules, its worktrees'
// configuration and the hooks folder core.hooksPath names in the folder.
func (w *walker) gitDir(p, dir string, s *Snapshot) error {
	s.gitDirs[p] = true
	for _, k := range gitKept {
		if err := w.addRoot(join(p, k), s, true); err != nil {
			return err
		}
	}
	files, err := w.includes(p, s)
	if err != nil {
		return err
	}
	// The repositories of its submodules and the configuration of its
	// worktrees, which git runs code from too.
	if err := w.gitDirs(join(p, "modules"), s, 0); err != nil {
		return err
	}
	if err := w.worktrees(join(p, "worktrees"), s); err != nil {
		return err
	}
	// Hooks kept in the worktree (core.hooksPath: .githooks, husky's
	// .husky/_): git runs them as it runs .git/hooks.
	for _, h := range w.hooksPath(dir, files, s) {
		if err := w.addRoot(h, s, true); err != nil {
			return err
		}
	}
	return nil
}

// addRoot records p (when it exists, with everything under it with deep)
// as a path checked as a whole, once. After the run, a root too large to
// record is marked so (it is undone whole) and the walk goes on.
func (w *walker) addRoot(p string, s *Snapshot, deep bool) error {
	if _, ok := s.deep[p]; ok {
		return nil
	}
	s.roots = append(s.roots, p)
	s.deep[p] = deep
	err := w.record(p, s, deep)
	if w.before != nil && errors.Is(err, ErrTooLarge) {
		s.large[p] = true
		return nil
	}
	return err
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
		s.gitDirs[d] = true
		for _, k := range gitKept {
			if err := w.addRoot(join(d, k), s, true); err != nil {
				return err
			}
		}
		if _, err := w.includes(d, s); err != nil {
			return err
		}
		if err := w.gitDirs(join(d, "modules"), s, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// worktrees records, as roots, the configuration of each worktree of a
// repository (its .git's worktrees, extensions.worktreeConfig) and its
// commondir (where git reads the rest of its configuration).
func (w *walker) worktrees(dir string, s *Snapshot) error {
	names, err := w.list(dir)
	if err != nil {
		return nil
	}
	for _, e := range names {
		if e.IsDir() {
			d := join(dir, e.Name())
			s.gitDirs[d] = true
			for _, k := range []string{"config.worktree", "commondir"} {
				if err := w.addRoot(join(d, k), s, false); err != nil {
					return err
				}
			}
			if _, err := w.includes(d, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// list reads the entries of the folder dir.
func (w *walker) list(dir string) ([]fs.DirEntry, error) {
	f, err := w.root.OpenFile(dir, os.O_RDONLY|openDirectory|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// record records p (when it exists) and, with deep, everything under it.
// Before the run a file or folder that cannot be read fails the walk (the
// run is not started: its folders could not be kept); after it, what
// cannot be read, or differs in size from what was kept, is recorded
// unread (it differs, and is undone), so nothing a run locks or grows
// stops the restore, and no more is read after the run than was kept.
func (w *walker) record(p string, s *Snapshot, deep bool) error {
	fi, err := w.root.Lstat(p)
	if err != nil {
		return nil // none: its absence is what is kept
	}
	e := entry{typ: fi.Mode().Type(), perm: fi.Mode().Perm(), id: idOf(fi)}
	switch {
	case fi.Mode().IsRegular() && w.before != nil:
		e.unread = true
		if b, ok := w.before.entries[p]; ok && b.typ == 0 && int64(len(b.data)) == fi.Size() {
			if data, err := readRegular(w.root, p, fi.Size()); err == nil {
				e.data, e.unread = data, false
			}
		}
	case fi.Mode().IsRegular():
		if w.bytes += fi.Size(); w.bytes > maxBytes {
			return fmt.Errorf("%s: %w", s.folder, ErrTooLarge)
		}
		if e.data, err = readRegular(w.root, p, fi.Size()); err != nil {
			return fmt.Errorf("keep %s: %w", path.Join(s.folder, p), err)
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.link, err = w.root.Readlink(p); err != nil {
			if w.before == nil {
				return fmt.Errorf("keep %s: %w", path.Join(s.folder, p), err)
			}
			e.unread = true
		}
	}
	s.entries[p] = e
	if !deep || !fi.IsDir() {
		return nil
	}
	names, err := w.list(p)
	if err != nil {
		if w.before == nil {
			return fmt.Errorf("keep %s: %w", path.Join(s.folder, p), err)
		}
		e.unread = true
		s.entries[p] = e
		return nil
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

// readRegular reads the regular file p of root, of size bytes, never
// waiting on what was put in its place since it was looked at (a FIFO).
func readRegular(root *os.Root, p string, size int64) ([]byte, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is no longer a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, size+1))
	if err == nil && int64(len(data)) != size {
		err = fmt.Errorf("%s changed as it was read", p)
	}
	return data, err
}

// walkAfter is walk after the run: without the byte bound, a root too
// large to record marked so (see addRoot); and then every root of before
// the walk did not reach (past maxWalked entries, or a root of its own
// found only through another) is recorded as well, on a bound of its own,
// so no change to what was kept goes unseen, and nothing kept is taken
// for removed because the walk stopped short of it.
func (w *walker) walkAfter(dir string, s, before *Snapshot) error {
	w.before = before
	if err := w.walk(dir, s); err != nil {
		return err
	}
	again := walker{root: w.root, before: before}
	for _, r := range before.roots {
		if _, ok := s.deep[r]; !ok {
			if err := again.addRoot(r, s, before.deep[r]); err != nil {
				return err
			}
		}
	}
	return nil
}
