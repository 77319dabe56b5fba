package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// HomeDirName is the folder of a run's own CLI homes inside its run folder,
// used when the worker has no persistent one (Wrapper.Homes unset).
const HomeDirName = "home"

// cliHome describes how a confined run of a preset gets a CLI home of its
// own on Linux: a folder named by the CLI's variable (CLAUDE_CONFIG_DIR,
// CODEX_HOME, GEMINI_CLI_HOME) that the run may write, holding links to
// the user's own settings (read-only to the run) and to the user's session
// transcripts (read-write), so nothing the run writes there configures or
// extends the CLI the user runs: hooks, MCP servers, instructions,
// commands, skills, plugins and extensions stay the user's.
type cliHome struct {
	// env is the variable naming the CLI's home.
	env string
	// dir is the user's CLI folder under the home folder, when env is
	// unset.
	dir string
	// sub is the CLI's folder inside the folder env names ("" for that
	// folder itself): Gemini CLI's GEMINI_CLI_HOME stands for the home
	// folder, whose .gemini is its folder.
	sub string
	// config are the entries of the user's CLI folder that configure,
	// extend or sign in the CLI: linked, read-only to the run.
	config []string
	// shared are the entries holding the CLI's session transcripts:
	// linked, read-write, so sessions stay the user's (session workers
	// resume them, the user sees the worker's). Made when missing; a
	// name ending in .jsonl is a file.
	shared []string
	// perFolder is the entry holding a folder of transcripts per project
	// (Claude Code's projects, named by projectName): linked, but only the
	// run's own folders' are read-write (made when missing), so a run
	// cannot plant text in another project's transcripts or memory.
	perFolder string
	// global is the CLI's global settings file the CLI rewrites in place
	// (Claude Code's .claude.json): copied from the user's before each
	// run, so the run writes its own copy.
	global string
	// keep are the files of a run's own writes in the home the next run
	// keeps (clearHome's patterns, relative to the home): the sessions the
	// CLI keeps there, which the worker resumes. The rest of the home is
	// cleared before each run, so nothing a run left there (a program, a
	// hook, an extension, a skill, a setting) is run or loaded by the next.
	keep []string
}

// cliHomes are the presets whose CLI gets a home of its own in a confined
// run (Linux). What a CLI writes that is not listed (its caches, logs,
// state databases, history, shell snapshots, its own skill copies) is
// written in the worker's home and cleared before its next run, but for
// keep.
var cliHomes = map[string]cliHome{
	"claude-code": {
		env: "CLAUDE_CONFIG_DIR", dir: ".claude",
		config: []string{"settings.json", "CLAUDE.md", "agents", "commands", "skills", "plugins", "output-styles",
			"hooks", "rules", "keybindings.json", ".credentials.json"},
		perFolder: "projects",
		global:    ".claude.json",
	},
	"codex": {
		env: "CODEX_HOME", dir: ".codex",
		config: []string{"config.toml", "AGENTS.md", "AGENTS.override.md", "instructions.md", "prompts", "rules",
			"hooks.json", "auth.json"},
		shared: []string{"sessions", "archived_sessions", "session_index.jsonl"},
	},
	"gemini": {
		env: "GEMINI_CLI_HOME", dir: ".gemini", sub: ".gemini",
		config: []string{"settings.json", "GEMINI.md", "commands", "extensions", "policies", "skills", "agents",
			"trustedFolders.json", "oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json"},
		// Its session files, and the ownership marker by which it finds
		// a project's folder of them again. Not its projects.json, whose
		// names it takes unchecked (a name "mine/chats" would make the
		// kept chats folder the project's temporary folder, whose memory
		// and skills it loads), nor what is in a folder in chats.
		keep: []string{".gemini/tmp/*/chats/*", ".gemini/tmp/*/.project_root"},
	},
}

// homeSetup is what Wrap prepares for a CLI home before the run: links in
// the CLI's folder to the user's entries, and a copy of the user's global
// settings. The run writes the home, so everything in it is done through
// an os.Root of the home (never following a link out of it).
type homeSetup struct {
	// home is the run's CLI home (the value of the CLI's variable); the
	// run may write inside it, not the home itself.
	home string
	// sub is the CLI's folder in home ("" for home itself, ".gemini").
	sub string
	// links are name → the user's entry (made, with shared ones, only
	// where the user's exists).
	links map[string]string
	// shared are the user's entries made when missing (transcripts).
	shared []string
	// copyFrom is the user's global settings file, copied to copyTo (a
	// name in the CLI's folder).
	copyFrom, copyTo string
	// keep are the patterns of what a run wrote that the next keeps (see
	// cliHome.keep); the rest of the home is cleared.
	keep []string
}

// userCLIFolder is the user's own CLI folder: the one the CLI's variable
// names in env, else dir under home ("" when neither is known).
func (h cliHome) userCLIFolder(env map[string]string, home string) string {
	if v := env[h.env]; filepath.IsAbs(v) {
		return filepath.Join(v, h.sub)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, h.dir)
}

// planHome adds a CLI home at private (the value of h.env for the run) to
// r: the user's entries linked into it read-only (not the rest of the
// user's CLI folder: its file history, prompt history, IDE lock files),
// the transcripts read-write, the private folder read-write, the variable
// in r.Env, and the setup.
//
// folders are the run's working and extra folders.
func planHome(r *Rules, h cliHome, env map[string]string, home, private string, folders []string) (ro, rw []string) {
	user := h.userCLIFolder(env, home)
	if user == "" {
		return nil, nil
	}
	s := homeSetup{home: private, sub: h.sub, links: map[string]string{}, keep: h.keep}
	for _, name := range h.config {
		s.links[name] = filepath.Join(user, name)
		ro = append(ro, s.links[name])
	}
	for _, name := range h.shared {
		p := filepath.Join(user, name)
		s.links[name] = p
		s.shared = append(s.shared, p)
		rw = append(rw, p)
	}
	if h.perFolder != "" {
		base := filepath.Join(user, h.perFolder)
		s.links[h.perFolder] = base
		s.shared = append(s.shared, base)
		for _, f := range folders {
			if name, ok := projectName(resolvedPath(f)); ok {
				s.shared = append(s.shared, filepath.Join(base, name))
				rw = append(rw, filepath.Join(base, name))
			} else if filepath.IsAbs(f) {
				rw = append(rw, base) // a name Claude Code shortens with a hash
			}
		}
	}
	if h.global != "" {
		src := filepath.Join(home, h.global)
		if v := env[h.env]; filepath.IsAbs(v) {
			src = filepath.Join(v, h.global)
		}
		s.copyFrom, s.copyTo = src, h.global
	}
	if r.Env == nil {
		r.Env = map[string]string{}
	}
	r.Env[h.env] = private
	r.homes = append(r.homes, s)
	return ro, append(rw, private)
}

// userFolder reports whether p (a path of presetPaths' config under home,
// or named by the CLI's variable) is the user's CLI folder or global
// settings file, which a run with a CLI home of its own reaches only
// through the entries linked into that home.
func (h cliHome) userFolder(p string, env map[string]string, home string) bool {
	p = filepath.Clean(p)
	if p == h.userCLIFolder(env, home) || (home != "" && p == filepath.Join(home, h.dir)) {
		return true
	}
	if v := env[h.env]; filepath.IsAbs(v) && p == filepath.Clean(v) {
		return true
	}
	return h.global != "" && home != "" && (p == filepath.Join(home, h.global) || p == filepath.Join(home, h.global+".backup"))
}

// projectName is the folder Claude Code keeps a project's transcripts in
// for the folder dir: every character but ASCII letters and digits
// replaced by "-"; false where Claude Code would shorten it (over 200
// characters).
func projectName(dir string) (string, bool) {
	if !filepath.IsAbs(dir) {
		return "", false
	}
	b := []byte(filepath.Clean(dir))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b), len(b) <= 200
}

// prepare makes the CLI home: the folder, cleared of what the last run
// left there but what the CLI keeps (clearHome), the user's transcripts
// when missing, a link per entry, and a fresh copy of the global settings.
// It never follows a link a run may have planted in the home: all of it is
// done relative to the home's open folder, the CLI's folder there is
// replaced by a real one when it is not one (a run that swapped it for a
// link to the user's ~/.claude), and links and the copy are made under a
// new name and renamed into place. A home that cannot be cleared is moved
// aside (and removed if it can be) and the run gets a new one, so no run
// can make every later one fail.
func (s homeSetup) prepare() error {
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return fmt.Errorf("create the CLI's home %s: %w", s.home, err)
	}
	removeOldHomes(filepath.Dir(s.home))
	d, err := openDir(s.home)
	if err == nil {
		if err = clearHome(d, s.keep); err != nil {
			d.Close()
			d, err = s.moveAside(err)
		}
	}
	if err != nil {
		return fmt.Errorf("open the CLI's home %s: %w", s.home, err)
	}
	defer d.Close()
	if s.sub != "" {
		if mode, err := d.lstat(s.sub); err == nil && !mode.IsDir() {
			if err := d.removeAll(s.sub); err != nil {
				return fmt.Errorf("clear %s: %w", d.path(s.sub), err)
			}
		}
		r, err := d.root()
		if err != nil {
			return fmt.Errorf("open the CLI's home %s: %w", s.home, err)
		}
		err = r.Mkdir(s.sub, 0o700)
		r.Close()
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create the CLI's folder %s: %w", d.path(s.sub), err)
		}
		sub, err := d.sub(s.sub)
		if err != nil {
			return fmt.Errorf("open the CLI's folder: %w", err)
		}
		defer sub.Close()
		d = sub
	}
	root, err := d.root()
	if err != nil {
		return fmt.Errorf("open the CLI's folder %s: %w", d.path("."), err)
	}
	defer root.Close()
	for _, p := range s.shared {
		var err error
		if strings.HasSuffix(p, ".jsonl") {
			if err = os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
				var f *os.File
				if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
					err = f.Close()
				}
			}
		} else {
			err = os.MkdirAll(p, 0o700)
		}
		if err != nil {
			return fmt.Errorf("create the CLI's session folder %s: %w", p, err)
		}
	}
	where := d.path
	for name, target := range s.links {
		if _, err := os.Stat(target); err != nil {
			// The user has none: neither has the run (nothing it left).
			if err := d.removeAll(name); err != nil {
				return fmt.Errorf("clear %s: %w", where(name), err)
			}
			continue
		}
		if err := replace(root, name, func(tmp string) error { return root.Symlink(target, tmp) }); err != nil {
			return fmt.Errorf("link %s to %s: %w", where(name), target, err)
		}
	}
	if s.copyTo == "" {
		return nil
	}
	src, err := os.Open(s.copyFrom)
	if errors.Is(err, os.ErrNotExist) {
		return d.removeAll(s.copyTo)
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", s.copyFrom, err)
	}
	defer src.Close()
	return replace(root, s.copyTo, func(tmp string) error {
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(src, maxGlobalSettings))
		return errors.Join(err, f.Close())
	})
}

// moveAside moves the home, which could not be cleared (cause), aside in
// its parent (the worker's homes, a run's folder, which the run cannot
// write), tries to remove it, and opens a new, empty home.
func (s homeSetup) moveAside(cause error) (*dir, error) {
	old := filepath.Join(filepath.Dir(s.home), fmt.Sprintf("%s%s-%d-%d", oldHomePrefix, filepath.Base(s.home), os.Getpid(), replaceSeq.Add(1)))
	if err := os.Rename(s.home, old); err != nil {
		return nil, fmt.Errorf("clear it: %w; move it aside: %w", cause, err)
	}
	removeOldHomes(filepath.Dir(s.home))
	if err := os.Mkdir(s.home, 0o700); err != nil {
		return nil, err
	}
	return openDir(s.home)
}

// removeOldHomes removes, as far as it can, the homes moved aside in the
// folder parent (moveAside): those that still cannot be removed are tried
// again before the next run, and go with the worker.
func removeOldHomes(parent string) {
	d, err := openDir(parent)
	if err != nil {
		return
	}
	defer d.Close()
	var old []string
	_ = d.names(func(names []string) {
		for _, n := range names {
			if strings.HasPrefix(n, oldHomePrefix) && len(old) < 64 {
				old = append(old, n)
			}
		}
	})
	for _, n := range old {
		_ = d.removeAll(n)
	}
}

// maxGlobalSettings bounds the copy of a CLI's global settings file.
const maxGlobalSettings = 64 << 20

// replaceSeq tells apart the temporary names of runs prepared at once.
var replaceSeq atomic.Int64

// replace makes a new entry under a temporary name in root with make and
// renames it over name, removing first whatever a rename cannot replace (a
// folder).
func replace(root *os.Root, name string, make func(tmp string) error) error {
	tmp := fmt.Sprintf("%s.crosschat-%d-%d.tmp", name, os.Getpid(), replaceSeq.Add(1))
	_ = root.RemoveAll(tmp)
	if err := make(tmp); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		if rerr := root.RemoveAll(name); rerr != nil {
			_ = root.Remove(tmp)
			return errors.Join(err, rerr)
		}
		if err := root.Rename(tmp, name); err != nil {
			_ = root.Remove(tmp)
			return err
		}
	}
	return nil
}
