package plantguard

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
)

// undoGit undoes a change to the repository at r (a .git entry): its
// kept entries (configuration, hooks) are roots of their own while it is
// the same folder; a .git folder renamed away is put back, and one that
// another took the place of keeps the original's configuration and hooks;
// a pointer file or link the run put in place of one is removed; a
// repository the run made keeps only git's own configuration and no hook.
func (u *undoer) undoGit(r string) (*Change, error) {
	a, was := u.before.entries[r]
	b, is := u.now.entries[r]
	if !was && !is {
		return nil, nil
	}
	if was && is && a.typ == b.typ {
		if a.typ == fs.ModeDir && a.id == b.id {
			return nil, nil // the same folder: its kept entries are checked as roots
		}
		if a.typ != fs.ModeDir && a.perm == b.perm && a.link == b.link && bytes.Equal(a.data, b.data) {
			return nil, nil
		}
	}
	u.done = append(u.done, r)
	switch {
	case !was && b.typ != fs.ModeDir:
		return &Change{Path: r, What: "added, pointing at a repository elsewhere; removed"}, u.remove(r)
	case !was:
		changed, err := u.sanitize(r)
		if !changed {
			return nil, err
		}
		return &Change{Path: r, What: "a repository the run made, with its own configuration or hooks; kept with git's own configuration only and no hooks"}, err
	case a.typ != fs.ModeDir:
		return &Change{Path: r, What: "changed; put back as it was"}, u.put(r)
	}
	// The user's repository folder: renamed away, removed, or replaced.
	what := "replaced by another repository; it keeps the original's configuration and hooks"
	if orig := u.find(path.Dir(r), r, a.id); orig != "" {
		if err := u.remove(r); err != nil {
			return &Change{Path: r, What: "renamed to " + path.Base(orig) + " and replaced; the original could not be put back"}, err
		}
		if err := u.root.Rename(orig, r); err != nil {
			return &Change{Path: r, What: "renamed to " + path.Base(orig) + "; it could not be put back"}, err
		}
		what = "renamed to " + path.Base(orig) + " (and replaced); put back"
	} else if !is || b.typ != fs.ModeDir {
		if err := u.remove(r); err != nil {
			return &Change{Path: r, What: "removed or replaced; the replacement could not be removed"}, err
		}
		if !is {
			return &Change{Path: r, What: "removed by the run (the repository is gone)"}, nil
		}
		return &Change{Path: r, What: "replaced by a file or link pointing at another repository; removed (the original is gone)"}, nil
	}
	var errs []error
	for _, k := range gitKept {
		errs = append(errs, u.put(join(r, k)))
	}
	return &Change{Path: r, What: what}, errors.Join(errs...)
}

// newGitDir reports whether dir is a repository folder that was not
// there before the run: one under a .git (a submodule's, a worktree's)
// nothing of which was kept, or another folder git takes for a
// repository's (isGitDir) that was not one before.
func (u *undoer) newGitDir(dir string) bool {
	if u.now.gitDirs[dir] && !u.before.gitDirs[dir] && !isGitName(path.Base(dir)) {
		return true
	}
	if !strings.Contains(strings.ToLower("/"+dir+"/"), "/.git/") {
		return false
	}
	for k := range u.before.entries {
		if strings.HasPrefix(k, dir+"/") {
			return false
		}
	}
	return true
}

// undoNewGitEntry leaves the kept entry r of a repository the run made
// as sanitize leaves a new .git's: git's own configuration only, its
// sample hooks only, no worktree configuration, no commondir.
func (u *undoer) undoNewGitEntry(r string) (*Change, error) {
	e := u.now.entries[r]
	switch path.Base(r) {
	case "config":
		if e.typ == 0 {
			data := u.readConfig(r)
			safe := SafeGitConfig(data)
			if bytes.Equal(safe, data) {
				return nil, nil
			}
			return &Change{Path: r, What: "a repository the run made; kept with git's own configuration only"},
				errors.Join(u.remove(r), u.root.WriteFile(r, safe, 0o644))
		}
	case "hooks":
		if e.typ == fs.ModeDir {
			var errs []error
			for k, h := range u.now.entries {
				if path.Dir(k) == r && !(h.typ == 0 && strings.HasSuffix(k, ".sample")) {
					errs = append(errs, u.remove(k))
				}
			}
			if len(errs) == 0 {
				return nil, nil
			}
			return &Change{Path: r, What: "a repository the run made; its hooks removed"}, errors.Join(errs...)
		}
	}
	return &Change{Path: r, What: "added; removed"}, u.remove(r)
}

// readConfig is the configuration file p of a repository the run made,
// nil when it cannot be read or is larger than maxConfig (then it keeps
// nothing of it).
func (u *undoer) readConfig(p string) []byte {
	fi, err := u.root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxConfig {
		return nil
	}
	data, err := readRegular(u.root, p, fi.Size())
	if err != nil {
		return nil
	}
	return data
}

// find is the folder of dir (among its entries) with identity id, "" when
// none has it.
func (u *undoer) find(dir, r string, id fileID) string {
	if id == (fileID{}) {
		return ""
	}
	f, err := u.root.OpenFile(dir, os.O_RDONLY|openDirectory|openNonBlock, 0)
	if err != nil {
		return ""
	}
	names, _ := f.ReadDir(-1)
	f.Close()
	for _, n := range names {
		p := join(dir, n.Name())
		if !n.IsDir() || p == r {
			continue
		}
		if fi, err := u.root.Lstat(p); err == nil && fi.IsDir() && idOf(fi) == id {
			return p
		}
	}
	return ""
}

// sanitize leaves a repository the run made (the folder r) with git's own
// configuration only (SafeGitConfig) and no hook but git's samples;
// changed says whether anything was taken out.
func (u *undoer) sanitize(r string) (changed bool, err error) {
	var errs []error
	cfg := join(r, "config")
	if e, ok := u.now.entries[cfg]; ok {
		if e.typ != 0 {
			changed = true
			errs = append(errs, u.remove(cfg))
		} else if data := u.readConfig(cfg); !bytes.Equal(SafeGitConfig(data), data) {
			changed = true
			errs = append(errs, u.remove(cfg), u.root.WriteFile(cfg, SafeGitConfig(data), 0o644))
		}
	}
	for _, k := range []string{"config.worktree", "commondir"} {
		if _, ok := u.now.entries[join(r, k)]; ok {
			changed = true
			errs = append(errs, u.remove(join(r, k)))
		}
	}
	hooks := join(r, "hooks")
	if e, ok := u.now.entries[hooks]; ok && e.typ != fs.ModeDir {
		changed = true
		errs = append(errs, u.remove(hooks))
	}
	for k, e := range u.now.entries {
		if strings.HasPrefix(k, hooks+"/") && path.Dir(k) == hooks && !(e.typ == 0 && strings.HasSuffix(k, ".sample")) {
			changed = true
			errs = append(errs, u.remove(k))
		}
	}
	return changed, errors.Join(errs...)
}

// gitSection and gitKey read the lines of a git configuration file.
var (
	gitSection = regexp.MustCompile(`^\s*\[\s*([A-Za-z0-9.-]+)\s*\]\s*(?:[#;].*)?$`)
	gitKey     = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*([^"\\#;]*?))?\s*(?:[#;].*)?$`)
)

// safeGitKeys are what `git init` and `git clone` write of themselves and
// run nothing: the repository's format and how it checks files out.
var safeGitKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true, "core.logallrefupdates": true,
	"core.ignorecase": true, "core.precomposeunicode": true, "core.symlinks": true,
	"extensions.objectformat": true, "extensions.refstorage": true,
}

// SafeGitConfig is a git configuration with only the keys of safeGitKeys
// (nothing that names a program, a hook folder, an include, a remote):
// what a repository a run made keeps. A line it cannot read plainly (a
// quoted or continued value, a subsection) is left out.
func SafeGitConfig(data []byte) []byte {
	var out bytes.Buffer
	section, written := "", ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		if m := gitSection.FindStringSubmatch(line); m != nil {
			section = strings.ToLower(m[1])
			continue
		}
		m := gitKey.FindStringSubmatch(line)
		if m == nil || !safeGitKeys[section+"."+strings.ToLower(m[1])] {
			continue
		}
		if written != section {
			out.WriteString("[" + section + "]\n")
			written = section
		}
		value := m[2]
		if value == "" && !strings.Contains(line, "=") {
			value = "true"
		}
		out.WriteString("\t" + strings.ToLower(m[1]) + " = " + value + "\n")
	}
	return out.Bytes()
}

// gitValue is the last value of key (lower case) in section of a git
// configuration, as SafeGitConfig reads it (plain values only; "" when it
// has none).
func gitValue(data []byte, section, key string) string {
	cur, value := "", ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if m := gitSection.FindStringSubmatch(line); m != nil {
			cur = strings.ToLower(m[1])
			continue
		}
		if m := gitKey.FindStringSubmatch(line); m != nil && cur == section && strings.ToLower(m[1]) == key {
			value = strings.TrimSpace(m[2])
		}
	}
	return value
}
