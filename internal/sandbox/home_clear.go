package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	// maxOpenDepth bounds the folders removing an entry holds open at
	// once (a run may nest folders without end, deeper than the open-files
	// limit): deeper folders are moved up and removed after.
	maxOpenDepth = 32
	// maxDeepMoves bounds how many folders one removal moves up.
	maxDeepMoves = 1 << 16
	// maxClearPasses bounds the readings of a folder being removed: one
	// more after each that removed something, as entries removed while a
	// folder is read may hide others from that reading. A folder whose
	// last reading still removed something is still being written (a
	// process left from a run): its removal fails.
	maxClearPasses = 8
	// maxClearEntries and maxClearTime bound the work of preparing a CLI
	// home (the entries read to keep its session files and to remove the
	// last one, whatever a run left there): past either, what is left of
	// the last home stays aside, removed before a later run or with the
	// worker.
	maxClearEntries = 100_000
	maxClearTime    = 5 * time.Second
	// maxKeptFile bounds the size of a file a CLI home keeps (a Gemini CLI
	// session file, which Gemini CLI reads whole on resume).
	maxKeptFile = 64 << 20
	// maxKeptPerFolder bounds the files kept per folder (the newest):
	// Gemini CLI reads every file of a project's chats when it resumes and
	// cleans up.
	maxKeptPerFolder = 500
	// oldHomePrefix starts the name a CLI home is moved aside under before
	// each run, in the folder of the worker's homes; deepPrefix the name of
	// a folder a removal moved up there (removeAll). Both are removed
	// before each run (removeOldHomes) and with the worker.
	oldHomePrefix = ".crosschat-old-"
	deepPrefix    = ".crosschat-deep-"
)

// errBudget is the error of work past a budget.
var errBudget = errors.New("over the budget of a CLI home's preparation")

// budget bounds the work of preparing a CLI home: entries read, and time.
// A nil budget bounds nothing.
type budget struct {
	left     int
	deadline time.Time
}

// newBudget is the budget of one preparation.
func newBudget() *budget {
	return &budget{left: maxClearEntries, deadline: time.Now().Add(maxClearTime)}
}

// spend counts one entry; errBudget once past maxClearEntries entries or
// maxClearTime.
func (b *budget) spend() error {
	if b == nil {
		return nil
	}
	b.left--
	if b.left < 0 {
		return fmt.Errorf("%w (%d entries)", errBudget, maxClearEntries)
	}
	if time.Now().After(b.deadline) {
		b.left = -1
		return fmt.Errorf("%w (%s)", errBudget, maxClearTime)
	}
	return nil
}

// entry is what dir.stat reports of an entry of a folder.
type entry struct {
	mode  fs.FileMode // 0 for a regular file, fs.ModeDir, else fs.ModeIrregular
	links uint64      // its names (hard links; 1 where the system does not say)
	size  int64
	mtime int64 // its modification time, in nanoseconds
}

// lstat reports the type of d's entry name (not following a link).
func (d *dir) lstat(name string) (fs.FileMode, error) {
	e, err := d.stat(name)
	return e.mode, err
}

// keptFile is a file a folder of a CLI home keeps.
type keptFile struct {
	name  string
	mtime int64
}

// keepable reports whether the entry e may stay in a CLI home: a regular
// file, with no other name (a hard link to a file outside the home, which
// a later run would reach through it), of at most maxKeptFile bytes.
func keepable(e entry) bool {
	return e.mode.IsRegular() && e.links == 1 && e.size <= maxKeptFile
}

// splitPatterns splits the keep patterns (slash-separated, relative to a
// home, one path.Match pattern per name) into their names.
func splitPatterns(keep []string) [][]string {
	pats := make([][]string, 0, len(keep))
	for _, k := range keep {
		pats = append(pats, strings.Split(strings.Trim(k, "/"), "/"))
	}
	return pats
}

// moveKept moves from the last CLI home from into the new one to the
// files the patterns pats name (see cliHome.keep), one folder at a time:
// a regular file a whole pattern names, with no other name (keepable), at
// most maxKeptPerFolder of them per folder (the newest); a folder a
// pattern goes through is made in to (removed again when nothing in it
// was kept) and gone through in turn. Nothing is followed: an entry that
// is a link, of another type, or not named is left in from (removed with
// it). Each file is checked again once in to, which no process left from
// a run can write, so one swapped in between is removed.
func moveKept(from, to *dir, pats [][]string, b *budget) error {
	var files []keptFile
	var errs []error
	rerr := from.names(func(names []string) bool {
		for _, name := range names {
			if err := b.spend(); err != nil {
				errs = append(errs, err)
				return false
			}
			whole := false
			var sub [][]string
			for _, p := range pats {
				if ok, _ := path.Match(p[0], name); ok {
					if len(p) == 1 {
						whole = true
					} else {
						sub = append(sub, p[1:])
					}
				}
			}
			if !whole && len(sub) == 0 {
				continue
			}
			e, err := from.stat(name)
			switch {
			case err != nil:
				if !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			case whole && keepable(e):
				files = append(files, keptFile{name, e.mtime})
			case len(sub) > 0 && e.mode.IsDir():
				if err := moveKeptFolder(from, to, name, sub, b); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return true
	})
	slices.SortFunc(files, func(a, b keptFile) int { return cmp.Compare(b.mtime, a.mtime) })
	for i, f := range files {
		if i >= maxKeptPerFolder {
			break
		}
		if err := from.moveTo(f.name, to); err != nil {
			errs = append(errs, err)
			continue
		}
		if e, err := to.stat(f.name); err != nil || !keepable(e) {
			errs = append(errs, errors.Join(err, to.remove(f.name)))
		}
	}
	return errors.Join(append(errs, rerr)...)
}

// moveKeptFolder moves what from's folder name keeps (moveKept) into to's
// folder of that name, made for it, and removed again when it keeps
// nothing.
func moveKeptFolder(from, to *dir, name string, pats [][]string, b *budget) error {
	if err := to.mkdir(name); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	c, err := from.sub(name)
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := to.sub(name)
	if err != nil {
		return err
	}
	err = moveKept(c, t, pats, b)
	t.Close()
	_ = to.removeEmpty(name)
	return err
}

// homeSlug reports whether slug names a folder of its own in the folder of
// the workers' CLI homes: one name, not "." or "..".
func homeSlug(slug string) bool {
	return slug != "" && slug != "." && filepath.IsLocal(slug) && !strings.ContainsAny(slug, `/\`)
}

// RemoveHome removes the CLI homes of the worker of the agent slug (every
// preset's) from Homes, when the worker or its agent is deleted: relative
// to Homes, so it follows no link a run planted in them and removes
// nothing outside Homes. A slug that is not one name removes nothing, as
// does a Wrapper without Homes.
func (w Wrapper) RemoveHome(slug string) error {
	if w.Homes == "" || !homeSlug(slug) {
		return nil
	}
	d, err := openDir(w.Homes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the CLI homes %s: %w", w.Homes, err)
	}
	defer d.Close()
	if err := d.removeAll(slug, nil); err != nil {
		return fmt.Errorf("remove the CLI homes of %s: %w", slug, err)
	}
	return nil
}
