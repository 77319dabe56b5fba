package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxClearDepth bounds how deep clearing a CLI home descends into the
// folders it keeps (a run may nest folders without end): an entry deeper
// than that is removed whole.
const maxClearDepth = 16

// clearHome removes from the CLI home root what a run left there that a
// later run could execute or load (Gemini CLI's tmp/bin, extensions,
// hooks, skills, commands, plugins, settings, shell snapshots and session
// environments, a script under any name): every entry but those keep
// names. keep are slash-separated patterns relative to the home, one
// path.Match pattern per name ("/.gemini/tmp/*/chats"): an entry a whole
// pattern names stays with what is inside it, but for the links, FIFOs,
// sockets and devices in it, which go; a folder a longer pattern goes
// through is cleared in turn; everything else is removed. Nothing is
// followed: an entry that is a link is removed itself, whatever its name.
// The entries linked or copied into the home are removed too: the
// preparation makes them again.
func clearHome(root *os.Root, keep []string) error {
	pats := make([][]string, 0, len(keep))
	for _, k := range keep {
		pats = append(pats, strings.Split(strings.Trim(k, "/"), "/"))
	}
	return clearDir(root, pats, false, 0)
}

// clearDir clears the folder r: each entry by clearEntry.
func clearDir(r *os.Root, pats [][]string, keepAll bool, depth int) error {
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	var errs []error
	for {
		// In batches: a run may leave any number of entries. Only entries
		// already read are removed, so none is skipped.
		names, err := d.Readdirnames(256)
		for _, name := range names {
			if err := clearEntry(r, name, pats, keepAll, depth); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(r.Name(), name), err))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}

// clearEntry keeps, clears or removes the entry name of the folder r: kept
// whole (keepAll, or a pattern ending at it) when it is a regular file or
// a folder (whose entries are kept in turn), cleared when it is a folder a
// pattern goes through (and removed when that left it empty), removed
// otherwise.
func clearEntry(r *os.Root, name string, pats [][]string, keepAll bool, depth int) error {
	whole := keepAll
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
	fi, err := r.Lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case whole && fi.Mode().IsRegular():
		return nil
	case (whole || len(sub) > 0) && fi.IsDir() && depth < maxClearDepth:
		c, err := r.OpenRoot(name)
		if err != nil {
			return err
		}
		err = clearDir(c, sub, whole, depth+1)
		c.Close()
		if err == nil && !whole {
			// A folder only passed through goes when nothing in it was
			// kept (Gemini CLI's tmp/bin, matched by tmp/*).
			_ = r.Remove(name)
		}
		return err
	}
	return removeEntry(r, name)
}

// removeEntry removes the entry name of r with what it holds, never
// following a link. A folder a run made unwritable (Landlock does not
// govern modes) is made writable first.
func removeEntry(r *os.Root, name string) error {
	err := r.RemoveAll(name)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return err
	}
	writable(r, name, 0)
	return r.RemoveAll(name)
}

// writable gives the owner every right on the folder name of r and the
// folders in it, down to maxClearDepth; anything else is left as it is.
func writable(r *os.Root, name string, depth int) {
	if fi, err := r.Lstat(name); err != nil || !fi.IsDir() {
		return
	}
	if err := r.Chmod(name, 0o700); err != nil || depth >= maxClearDepth {
		return
	}
	c, err := r.OpenRoot(name)
	if err != nil {
		return
	}
	defer c.Close()
	d, err := c.Open(".")
	if err != nil {
		return
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			writable(c, n, depth+1)
		}
		if err != nil {
			return
		}
	}
}

// homeSlug reports whether slug names a folder of its own in the folder of
// the workers' CLI homes: one name, not "." or "..".
func homeSlug(slug string) bool {
	return slug != "" && slug != "." && filepath.IsLocal(slug) && !strings.ContainsAny(slug, `/\`)
}

// RemoveHome removes the CLI homes of the worker of the agent slug (every
// preset's) from Homes, when the worker or its agent is deleted: through
// an os.Root of Homes, so it follows no link a run planted in them and
// removes nothing outside Homes. A slug that is not one name removes
// nothing, as does a Wrapper without Homes.
func (w Wrapper) RemoveHome(slug string) error {
	if w.Homes == "" || !homeSlug(slug) {
		return nil
	}
	root, err := os.OpenRoot(w.Homes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the CLI homes %s: %w", w.Homes, err)
	}
	defer root.Close()
	if err := removeEntry(root, slug); err != nil {
		return fmt.Errorf("remove the CLI homes of %s: %w", slug, err)
	}
	return nil
}
