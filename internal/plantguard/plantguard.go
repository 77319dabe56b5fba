// Package plantguard keeps a run from planting code for later in the
// folders it may write: the files other programs run code from when the
// user works there after the run, outside any sandbox. Those are a git
// repository's configuration and hooks (core.fsmonitor runs at the next
// `git status`, a post-checkout hook at the next checkout; a `.git`
// replaced by another repository, or by a file pointing at one, brings its
// own) and the agent CLIs' project settings (Claude Code's .claude and
// .mcp.json, Codex's .codex, Gemini CLI's .gemini, the skills in .agents:
// hooks, MCP servers, commands and skills they run). Landlock only grants
// rights beneath a folder, never takes them away, so a run that may write
// a folder may write these too: Take records them before the run and
// Restore undoes every change to them after it. It imports only the
// standard library.
package plantguard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
)

// settings are the names of the agent CLIs' project settings, kept whole
// wherever they are in a folder: Claude Code's (hooks, MCP servers,
// commands, agents, skills) and its project MCP servers, Codex's (its
// project config.toml: MCP servers, notify; hooks), Gemini CLI's (MCP
// servers, tool discovery commands, custom commands, extensions, its .env),
// the skills folder Codex and Gemini CLI read, OpenCode's (MCP servers,
// plugins it runs) and Cursor's (MCP servers).
var settings = map[string]bool{
	".claude": true, ".mcp.json": true, ".codex": true, ".gemini": true, ".agents": true,
	".opencode": true, "opencode.json": true, "opencode.jsonc": true, ".cursor": true,
	// The hook managers' configuration, whose commands the hook they
	// install in .git/hooks runs at the user's next commit: the pre-commit
	// framework's (a local hook's entry is any command) and lefthook's.
	".pre-commit-config.yaml": true, ".pre-commit-config.yml": true,
	"lefthook.yml": true, "lefthook.yaml": true, "lefthook.json": true, "lefthook.toml": true,
	".lefthook.yml": true, ".lefthook.yaml": true, ".lefthook.json": true, ".lefthook.toml": true,
	"lefthook-local.yml": true, "lefthook-local.yaml": true, ".lefthook-local.yml": true, ".lefthook-local.yaml": true,
	".lefthook": true,
}

// isSettings and isGitName tell the kept names whatever their case: on a
// file system that ignores case (macOS's by default) .Claude is .claude
// and .GIT is .git to the programs that read them.
func isSettings(name string) bool { return settings[strings.ToLower(name)] }

func isGitName(name string) bool { return strings.EqualFold(name, ".git") }

// gitKept are the entries of a repository's .git folder that are kept:
// what git runs code from (its configuration, its hooks) and commondir,
// which names the folder git reads the rest of the configuration and the
// hooks from; the rest (objects, refs, the index) is the run's to change.
var gitKept = []string{"config", "config.worktree", "hooks", "commondir"}

// Bounds of a snapshot: entries walked in a folder (past them the rest of
// the folder is not checked, which Restore says), and bytes of the files
// kept (past them Take fails: the run cannot be protected).
var maxWalked = 200_000 // a variable for the tests

const maxBytes = 64 << 20

// ErrTooLarge: the settings to keep are too large to keep.
var ErrTooLarge = errors.New("the repository configuration and the agent CLIs' settings in this folder are too large to keep for the run")

// entry is one file system entry as it was: its type, permissions and
// content (a regular file's bytes, a link's target), and for a folder its
// identity (a .git folder renamed away is found by it).
type entry struct {
	typ  fs.FileMode
	perm fs.FileMode
	data []byte
	link string
	id   fileID
	// unread: recorded after the run without its content (one that
	// could not be read, or whose size differs from what was kept), so
	// it differs.
	unread bool
}

// Snapshot is what a folder's kept entries were before a run.
type Snapshot struct {
	folder string
	// id is the folder's identity: the restore undoes that folder only.
	id fileID
	// entries are the kept entries and everything under them, by path
	// relative to the folder (slash-separated).
	entries map[string]entry
	// roots are the paths each checked as a whole: every .git, the kept
	// entries of a repository folder, every settings entry, what those
	// name or link to in the folder; deep tells, for each, whether
	// everything under it was recorded too.
	roots []string
	deep  map[string]bool
	// gitDirs are the repository folders found (.git folders, the
	// repositories of submodules and worktrees, and any other folder git
	// takes for one).
	gitDirs map[string]bool
	// large are the roots too large to record after the run (undone
	// whole).
	large map[string]bool
	// partial: the walk stopped at maxWalked entries.
	partial bool
}

// newSnapshot is an empty snapshot of folder.
func newSnapshot(folder string) *Snapshot {
	return &Snapshot{folder: folder, entries: map[string]entry{}, deep: map[string]bool{}, gitDirs: map[string]bool{}, large: map[string]bool{}}
}

// Take records the kept entries of folder, wherever they are in it (a
// walk of at most maxWalked entries, following no link).
func Take(folder string) (*Snapshot, error) {
	root, id, err := openFolder(folder)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	s := newSnapshot(folder)
	s.id = id
	w := walker{root: root}
	if err := w.walk(".", s); err != nil {
		return nil, err
	}
	s.partial = w.n >= maxWalked
	if w.bytes > maxBytes {
		return nil, fmt.Errorf("%s: %w (%d MiB)", folder, ErrTooLarge, w.bytes>>20)
	}
	return s, nil
}

// openFolder opens folder as an os.Root, and returns the folder's
// identity, when it is a real folder reached through no link: the very
// folder the worker checked and gave the run, never what a process put
// in its place (a link to the home folder would have the home's own
// .claude and .git undone to the project's).
func openFolder(folder string) (*os.Root, fileID, error) {
	id, err := folderID(folder)
	if err != nil {
		return nil, fileID{}, fmt.Errorf("open %s: %w", folder, err)
	}
	root, err := os.OpenRoot(folder)
	if err != nil {
		return nil, fileID{}, fmt.Errorf("open %s: %w", folder, err)
	}
	fi, err := root.Stat(".")
	if err != nil || idOf(fi) != id {
		root.Close()
		return nil, fileID{}, fmt.Errorf("open %s: it changed as it was opened", folder)
	}
	return root, id, nil
}

// Change is one kept entry a run changed, and what undoing it did.
type Change struct {
	// Path is the entry's path (under the folder).
	Path string
	// What the run did ("added", "changed", "removed", "replaced") and
	// how it was undone.
	What string
}

func (c Change) String() string { return c.Path + " (" + c.What + ")" }

// Restore undoes every change a run made to the folder's kept entries
// since s was taken, following no link: an entry that changed, or under
// which anything changed, is removed and made again as it was; one that
// was not there is removed; a repository the run made (a .git that was not
// there) keeps its objects and refs but only the configuration git itself
// writes (SafeGitConfig) and no hook. A .git folder renamed away is put
// back. It returns what it undid (nil for nothing) and whether the folder
// was checked only in part (past maxWalked entries); an error says what
// could not be undone.
func (s *Snapshot) Restore() (undone []Change, partial bool, err error) {
	root, id, err := openFolder(s.folder)
	if err == nil && id != s.id {
		root.Close()
		err = fmt.Errorf("%s is another folder than the one kept", s.folder)
	}
	if err != nil {
		return nil, s.partial, fmt.Errorf("%w; it was replaced during the run (by a process that may write the folder "+
			"holding it), so nothing was undone there: check its git configuration and agent settings before you use them", err)
	}
	defer root.Close()
	now := newSnapshot(s.folder)
	w := walker{root: root}
	// What is there now: read only to compare with what was kept, and
	// every root kept before, wherever the walk stopped.
	if err := w.walkAfter(".", now, s); err != nil {
		return nil, s.partial, err
	}
	u := undoer{root: root, before: s, now: now}
	roots := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(s.roots), now.roots...))))
	var errs []error
	for _, r := range roots {
		if u.inUndone(r) {
			continue // under one undone already
		}
		c, err := u.undo(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", path.Join(s.folder, r), err))
		}
		if c != nil {
			c.Path = path.Join(s.folder, c.Path)
			undone = append(undone, *c)
		}
	}
	sort.Slice(undone, func(i, j int) bool { return undone[i].Path < undone[j].Path })
	return undone, s.partial || w.n >= maxWalked, errors.Join(errs...)
}

// undoer undoes the changes of one folder.
type undoer struct {
	root        *os.Root
	before, now *Snapshot
	done        []string
}

func (u *undoer) inUndone(p string) bool {
	return slices.ContainsFunc(u.done, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") })
}

// differs reports whether anything at or under p differs between before
// and now.
func (u *undoer) differs(p string) bool {
	keys := map[string]bool{}
	for _, m := range []map[string]entry{u.before.entries, u.now.entries} {
		for k := range m {
			if k == p || strings.HasPrefix(k, p+"/") {
				keys[k] = true
			}
		}
	}
	for k := range keys {
		a, inA := u.before.entries[k]
		b, inB := u.now.entries[k]
		if inA != inB || a.typ != b.typ || a.perm != b.perm || a.link != b.link || !bytes.Equal(a.data, b.data) || a.unread || b.unread {
			return true
		}
	}
	return u.now.large[p]
}

// undo undoes the changes at root r, when there are.
func (u *undoer) undo(r string) (*Change, error) {
	if isGitName(path.Base(r)) {
		return u.undoGit(r)
	}
	if !u.differs(r) {
		return nil, nil
	}
	_, was := u.before.entries[r]
	_, is := u.now.entries[r]
	if !was && u.newGitDir(path.Dir(r)) {
		// A kept entry of a repository the run made (a submodule's it
		// added): kept as sanitize keeps a new .git's.
		return u.undoNewGitEntry(r)
	}
	what := "changed; put back as it was"
	switch {
	case !was:
		what = "added; removed"
	case !is:
		what = "removed; made again"
	}
	u.done = append(u.done, r)
	return &Change{Path: r, What: what}, u.put(r)
}

// put removes whatever is at p and makes again what was there before the
// run (nothing when nothing was), with everything under it.
func (u *undoer) put(p string) error {
	if err := u.remove(p); err != nil {
		return err
	}
	var keys []string
	for k := range u.before.entries {
		if k == p || strings.HasPrefix(k, p+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // a folder before what is in it
	var errs []error
	for _, k := range keys {
		e := u.before.entries[k]
		var err error
		switch {
		case e.typ == fs.ModeDir:
			if err = u.root.Mkdir(k, 0o700); err == nil {
				defer func() { _ = u.root.Chmod(k, e.perm) }() // once what is in it is made
			}
		case e.typ == fs.ModeSymlink:
			err = u.root.Symlink(e.link, k)
		case e.typ == 0:
			var f *os.File
			if f, err = u.root.OpenFile(k, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				_, err = f.Write(e.data)
				err = errors.Join(err, f.Close(), u.root.Chmod(k, e.perm))
			}
		}
		// Other types (a FIFO, a socket of the user's) are not made again.
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// remove removes p and everything under it, giving each folder its
// owner's rights back first (a run may have made one unwritable); it
// follows no link.
func (u *undoer) remove(p string) error {
	fi, err := u.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		_ = u.root.Chmod(p, 0o700)
		if f, err := u.root.OpenFile(p, os.O_RDONLY|openDirectory|openNonBlock, 0); err == nil {
			names, _ := f.ReadDir(-1)
			f.Close()
			for _, n := range names {
				if n.IsDir() {
					_ = u.remove(join(p, n.Name()))
				}
			}
		}
	}
	return u.root.RemoveAll(p)
}

// join joins a relative slash path and a name.
func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
