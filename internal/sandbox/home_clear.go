package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

const (
	// maxOpenDepth bounds the folders removing an entry holds open at
	// once (a run may nest folders without end, deeper than the open-files
	// limit): deeper folders are moved up and removed after.
	maxOpenDepth = 32
	// maxDeepMoves bounds how many folders one removal moves up.
	maxDeepMoves = 1 << 16
	// maxClearPasses bounds the readings of a folder being cleared: one
	// more after each that removed something, as entries removed while a
	// folder is read may hide others from that reading.
	maxClearPasses = 8
	// oldHomePrefix starts the name a CLI home is moved aside under when
	// it cannot be cleared, in the folder of the worker's homes.
	oldHomePrefix = ".crosschat-old-"
)

// clearHome removes from the CLI home d what a run left there that a
// later run could execute or load (Gemini CLI's tmp/bin, extensions,
// hooks, skills, commands, plugins, settings, shell snapshots and session
// environments, its project registry, a script under any name): every
// entry but the files keep names. keep are slash-separated patterns
// relative to the home, one path.Match pattern per name
// ("/.gemini/tmp/*/chats/*"): a regular file a whole pattern names stays;
// a folder a pattern goes through is cleared in turn (and removed when
// nothing in it stayed); everything else is removed, folders with what
// they hold. Nothing is followed: an entry that is a link is removed
// itself, whatever its name. The entries linked or copied into the home
// are removed too: the preparation makes them again.
func clearHome(d *dir, keep []string) error {
	pats := make([][]string, 0, len(keep))
	for _, k := range keep {
		pats = append(pats, strings.Split(strings.Trim(k, "/"), "/"))
	}
	return clearDir(d, pats)
}

// clearDir clears the folder d: each entry by clearEntry, pass after pass
// while one removes something.
func clearDir(d *dir, pats [][]string) error {
	var errs []error
	for pass := 0; pass < maxClearPasses; pass++ {
		removed := 0
		errs = errs[:0]
		err := d.names(func(names []string) {
			for _, name := range names {
				gone, err := clearEntry(d, name, pats)
				if err != nil {
					errs = append(errs, err)
				} else if gone {
					removed++
				}
			}
		})
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if removed == 0 {
			break
		}
	}
	return errors.Join(errs...)
}

// clearEntry keeps, clears or removes the entry name of the folder d: kept
// when it is a regular file a pattern ends at, cleared when it is a folder
// a pattern goes through (and removed when nothing in it was kept),
// removed otherwise. gone reports that it was removed.
func clearEntry(d *dir, name string, pats [][]string) (gone bool, err error) {
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
	mode, err := d.lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case whole && mode.IsRegular():
		return false, nil
	case len(sub) > 0 && mode.IsDir():
		c, err := d.sub(name)
		if err != nil {
			return false, err
		}
		err = clearDir(c, sub)
		c.Close()
		// A folder only passed through goes when nothing in it was kept
		// (Gemini CLI's tmp/bin, matched by tmp/*).
		return err == nil && d.remove(name) == nil, err
	}
	return true, d.removeAll(name)
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
	if err := d.removeAll(slug); err != nil {
		return fmt.Errorf("remove the CLI homes of %s: %w", slug, err)
	}
	return nil
}
