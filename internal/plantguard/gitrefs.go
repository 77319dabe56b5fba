package plantguard

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

// What a repository's kept entries point git at in the folder, kept too:
// git does not only run what a repository's config and hooks say. It reads
// the configuration of the folder a commondir names (kept as an entry of
// each repository), takes any folder holding HEAD with objects and refs (or
// a commondir) for a repository's own folder (isGitDir), reads the files
// an include names (includes), runs the file a hook links to
// (followLinks), and husky's hooks run the scripts one folder up from the
// hooks folder (hooksPath).

// derived: what a kept entry points at is found before the run only, and
// after it checked as it was kept then; what the run pointed a kept entry
// at is not taken for a root of its own (an include or a link it added
// naming a file of the user's is undone with the entry that names it,
// never by removing that file), and a repository the run made keeps no
// include, hooks folder or hook.

// isGitDir reports whether a folder of names is one git takes for a
// repository's own folder when it looks for one (git's is_git_directory):
// HEAD, and objects and refs or a commondir naming where they are.
func isGitDir(names []fs.DirEntry) bool {
	has := map[string]bool{}
	for _, e := range names {
		switch e.Name() {
		case "HEAD", "objects", "refs", "commondir":
			has[e.Name()] = true
		}
	}
	return has["HEAD"] && (has["commondir"] || has["objects"] && has["refs"])
}

// maxIncludeDepth bounds the includes followed from one configuration.
const maxIncludeDepth = 10

// includes records, as roots, the files the configuration of the
// repository folder gitdir includes (include.path, includeIf.*.path,
// whatever the condition) that are in the folder, and theirs in turn. It
// returns the repository's configuration files, those included last.
func (w *walker) includes(gitdir string, s *Snapshot) ([]string, error) {
	files := []string{join(gitdir, "config"), join(gitdir, "config.worktree")}
	if w.before != nil {
		return files, nil // after the run: see derived
	}
	queue := files
	for depth := 0; len(queue) > 0 && depth <= maxIncludeDepth; depth++ {
		var next []string
		for _, cfg := range queue {
			data, err := w.configText(cfg, s)
			if err != nil {
				continue
			}
			for _, inc := range gitIncludes(data) {
				p, ok := w.inFolder(path.Dir(cfg), inc)
				if !ok || slices.Contains(files, p) {
					continue
				}
				if err := w.addRoot(p, s, true); err != nil {
					return nil, err
				}
				files = append(files, p)
				next = append(next, p)
			}
		}
		queue = next
	}
	return files, nil
}

// configText is the configuration file cfg as recorded, or read now when
// it was not recorded whole (after the run, one that changed).
func (w *walker) configText(cfg string, s *Snapshot) ([]byte, error) {
	if e, ok := s.entries[cfg]; ok && e.typ == 0 && !e.unread {
		return e.data, nil
	}
	fi, err := w.root.Lstat(cfg)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxConfig {
		return nil, fs.ErrNotExist
	}
	return readRegular(w.root, cfg, fi.Size())
}

// maxConfig bounds a configuration file read for what it names.
const maxConfig = 1 << 20

// hooksPath are the folders of the folder that a repository whose
// configuration files are files (the last one setting it wins), of the
// worktree dir, takes its hooks from (core.hooksPath): the folder itself
// and, when it is husky's "_" (husky 9 sets core.hooksPath to .husky/_,
// whose hooks run .husky/<hook>), the folder holding it. None when none
// sets it, or it names one outside the folder.
func (w *walker) hooksPath(dir string, files []string, s *Snapshot) []string {
	if w.before != nil {
		return nil // after the run: see derived
	}
	h := ""
	for _, cfg := range files {
		if data, err := w.configText(cfg, s); err == nil {
			if v := gitValue(data, "core", "hookspath"); v != "" {
				h = v
			}
		}
	}
	if h == "" {
		return nil
	}
	p, ok := w.inFolder(dir, h)
	if !ok {
		return nil
	}
	out := []string{p}
	if path.Base(p) == "_" && path.Dir(p) != "." {
		out = append(out, path.Dir(p))
	}
	return out
}

// maxLinkHops bounds the links followed from one kept entry.
const maxLinkHops = 8

// followLinks records, as roots, what the links among the kept entries
// point at in the folder (a hook that links to scripts/pre-commit runs
// that file; a settings file may link to one elsewhere in the folder), and
// what those point at in turn.
func (w *walker) followLinks(s *Snapshot) error {
	if w.before != nil {
		return nil // after the run: see derived
	}
	for range maxLinkHops {
		var targets []string
		for k, e := range s.entries {
			if e.typ != fs.ModeSymlink || e.link == "" {
				continue
			}
			if p, ok := w.inFolder(path.Dir(k), e.link); ok && !w.covered(p, s) {
				targets = append(targets, p)
			}
		}
		if len(targets) == 0 {
			return nil
		}
		for _, p := range targets {
			if err := w.addRoot(p, s, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// covered reports whether p is a root recorded whole, or lies in one.
func (w *walker) covered(p string, s *Snapshot) bool {
	for q := p; ; q = path.Dir(q) {
		if deep, ok := s.deep[q]; ok && (deep || q == p) {
			return true
		}
		if q == "." || q == "/" {
			return false
		}
	}
}

// inFolder is the path a kept file at base names as p (relative to base,
// or absolute), as a path of the folder; false when it is outside it (or
// the folder itself).
func (w *walker) inFolder(base, p string) (string, bool) {
	if path.IsAbs(p) {
		rel, ok := strings.CutPrefix(path.Clean(p), path.Clean(w.root.Name())+"/")
		if !ok {
			return "", false
		}
		p = rel
	} else {
		p = path.Join(base, p)
	}
	if p = path.Clean(p); p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// gitHeader reads a section header with its optional subsection
// (`[includeIf "gitdir:~/work/"]`).
var gitHeader = regexp.MustCompile(`^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]`)

// gitIncludes are the paths the git configuration data includes: each
// path of an include or includeIf section, as written (quotes and their
// escapes undone).
func gitIncludes(data []byte) []string {
	var out []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxConfig)
	for sc.Scan() {
		line := sc.Text()
		if m := gitHeader.FindStringSubmatch(line); m != nil {
			section = strings.ToLower(m[1])
			line = line[len(m[0]):]
		}
		if section != "include" && section != "includeif" && !strings.HasPrefix(section, "includeif.") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		if v = gitUnquote(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// gitUnquote is a configuration value as git reads it: trimmed, its
// comment cut off, its quotes and escapes undone.
func gitUnquote(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}
