package sandbox

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	// keeps (moveKept's patterns, relative to the home): the sessions the
	// CLI keeps there, which the worker resumes. Each run gets a new home
	// with only those moved into it, so nothing else a run left there (a
	// program, a hook, an extension, a skill, a setting) is run or loaded
	// by the next.
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
		// Its session files (session-TIME-ID.jsonl; .json, which it reads too),
		// and the ownership marker by which it finds a project's folder
		// of them again. Not its projects.json, whose names it takes
		// unchecked (a name "mine/chats" would make the kept chats folder
		// the project's temporary folder, whose memory and skills it
		// loads), nor what is in a folder in chats.
		keep: []string{".gemini/tmp/*/chats/session-*.jsonl", ".gemini/tmp/*/chats/session-*.json", ".gemini/tmp/*/.project_root"},
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
	// name in the CLI's folder), as runSettings gives it.
	copyFrom, copyTo string
	// copies are the user's settings files given as copies instead of
	// links (name → content): those that held the relay's server entries
	// or a relay credential (runSettings).
	copies map[string][]byte
	// settings is what a run of preset gets of a settings file (see
	// runSettings).
	preset   string
	settings SettingsFilter
	// server is the run's own MCP server name (the filter's server).
	server string
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
// folders are the run's working and extra folders, as their rules are
// (folderRule).
//
// A settings file that holds the relay's server entries or a relay
// credential (runSettings) is given as a copy without them, and the run
// gets no rule for the user's own file.
func planHome(r *Rules, h cliHome, env map[string]string, home, private string, folders []string, preset, server string, settings SettingsFilter) (ro, rw []string) {
	user := h.userCLIFolder(env, home)
	if user == "" {
		return nil, nil
	}
	s := homeSetup{home: private, sub: h.sub, links: map[string]string{}, keep: h.keep, copies: map[string][]byte{},
		preset: preset, server: server, settings: settings}
	for _, name := range h.config {
		p := filepath.Join(user, name)
		if data, ok := readSettings(p); ok {
			if out := s.runSettings(name, data); !bytes.Equal(out, data) {
				s.copies[name] = out
				continue
			}
		} else {
			// A regular file too large to look through for a relay
			// credential (over maxSettings), or unreadable, is not given
			// to the run; for it, as where the user has none, the run has
			// what the filter makes of nothing (a Gemini run's own
			// server), if anything.
			fi, err := os.Stat(p)
			unread := err == nil && fi.Mode().IsRegular()
			if _, err := os.Lstat(p); unread || errors.Is(err, os.ErrNotExist) {
				if out := s.runSettings(name, nil); len(out) > 0 {
					s.copies[name] = out
					continue
				}
			}
			if unread {
				continue
			}
		}
		s.links[name] = p
		ro = append(ro, p)
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
			if name, ok := projectName(f); ok { // f as its rule is (folderRule)
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

// prepare makes the CLI home: a new folder each run, into which only
// what the CLI keeps of the last one is moved (moveKept: checked, bounded
// in number and size), the user's transcripts when missing, a link per
// entry, and a fresh copy of the global settings. The last home is moved
// aside first (oldHomePrefix, never replacing anything) and removed, as
// far as it can be in a bounded time (newBudget): so nothing a run left
// there, nor a process left from a run still writing there (its Landlock
// rules name the old folder, not the new one), reaches the next run, and
// no run can make every later one fail. It never follows a link a run may
// have planted: all of it is done relative to open folders, in a home
// made anew. warning, for the run's log, says what of the
// last homes could not be removed (tried again before the next run).
func (s homeSetup) prepare() (warning string, err error) {
	parent, base := filepath.Dir(s.home), filepath.Base(s.home)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("create the CLI's home %s: %w", s.home, err)
	}
	p, err := openDir(parent)
	if err != nil {
		return "", fmt.Errorf("open the CLI homes %s: %w", parent, err)
	}
	defer p.Close()
	old, err := moveAside(p, base)
	if err != nil {
		return "", fmt.Errorf("move the last CLI home %s aside: %w", s.home, err)
	}
	if err := p.mkdir(base); err != nil {
		return "", fmt.Errorf("create the CLI's home %s: %w", s.home, err)
	}
	d, err := p.sub(base)
	if err != nil {
		return "", fmt.Errorf("open the CLI's home %s: %w", s.home, err)
	}
	b := newBudget()
	var problems []error
	if old != "" && len(s.keep) > 0 {
		o, err := p.sub(old)
		if err == nil {
			err = moveKept(o, d, splitPatterns(s.keep), b)
			o.Close()
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("keep its session files: %w", err))
		}
	}
	if err := removeOldHomes(p, b); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		warning = homeWarning(s.home, errors.Join(problems...))
	}
	err = s.fill(d)
	d.Close()
	return warning, err
}

// maxWarning bounds the cause a warning quotes.
const maxWarning = 400

// homeWarning is the run log's warning for the last CLI home of home,
// which could not be removed (cause) or its session files kept.
func homeWarning(home string, cause error) string {
	msg := strings.Join(strings.Fields(cause.Error()), " ")
	if len(msg) > maxWarning {
		msg = strings.ToValidUTF8(msg[:maxWarning], "") + "…"
	}
	return fmt.Sprintf("Warning: the worker's last CLI home was moved aside for this run in %s, but not all of it could be removed (a process left from a run may still be writing there); it is tried again before the next run and goes with the worker: %s",
		filepath.Dir(home), msg)
}

// fill fills the new CLI home d, which holds nothing yet but what
// moveKept moved into it (files in folders none of the links or the copy
// is named after): the CLI's folder, the user's transcripts when missing,
// a link per entry the user has, and the copy of the global settings.
func (s homeSetup) fill(d *dir) error {
	if s.sub != "" {
		if err := d.mkdir(s.sub); err != nil && !errors.Is(err, os.ErrExist) {
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
	for name, target := range s.links {
		if _, err := os.Stat(target); err != nil {
			continue // the user has none: neither has the run
		}
		if err := root.Symlink(target, name); err != nil {
			return fmt.Errorf("link %s to %s: %w", d.path(name), target, err)
		}
	}
	for name, data := range s.copies {
		if err := writeNew(root, name, data); err != nil {
			return fmt.Errorf("copy %s: %w", d.path(name), err)
		}
	}
	if s.copyTo == "" {
		return nil
	}
	src, err := os.Open(s.copyFrom)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", s.copyFrom, err)
	}
	data, err := io.ReadAll(io.LimitReader(src, maxGlobalSettings))
	src.Close()
	if err != nil {
		return fmt.Errorf("copy %s: %w", s.copyFrom, err)
	}
	if err := writeNew(root, s.copyTo, s.runSettings(s.copyTo, data)); err != nil {
		return fmt.Errorf("copy %s: %w", s.copyFrom, err)
	}
	return nil
}

// writeNew writes a new file name of root (never one that exists), owner-only.
func writeNew(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// moveAside renames the CLI home name of the folder p (the worker's
// homes, a run's folder, which the run cannot write) aside under a new
// name (oldHomePrefix, a random suffix; never replacing anything) and
// returns that name, "" when there is no home.
func moveAside(p *dir, name string) (string, error) {
	for range 4 {
		old := oldHomePrefix + name + "-" + asideSuffix()
		err := p.rename(name, old)
		switch {
		case err == nil:
			return old, nil
		case errors.Is(err, fs.ErrNotExist):
			return "", nil
		case !errors.Is(err, fs.ErrExist):
			return "", err
		}
	}
	return "", fmt.Errorf("move %s aside: every name tried is taken", p.path(name))
}

// asideSuffix ends the name of a home moved aside: random, so a relay
// started again (under the same process id) picks no name of a home it
// moved aside before.
var asideSuffix = func() string { return rand.Text()[:16] }

// maxOldHomes bounds the homes moved aside removeOldHomes removes at once.
const maxOldHomes = 64

// removeOldHomes removes from the folder p the homes moved aside
// (moveAside) and the folders a removal moved up there (removeAll), as
// far as b lets it; what is left is tried again before the next run, and
// goes with the worker.
func removeOldHomes(p *dir, b *budget) error {
	var old []string
	err := p.names(func(names []string) bool {
		for _, n := range names {
			if strings.HasPrefix(n, oldHomePrefix) || strings.HasPrefix(n, deepPrefix) {
				old = append(old, n)
			}
		}
		return len(old) < maxOldHomes
	})
	errs := []error{err}
	for _, n := range old {
		errs = append(errs, p.removeAll(n, b))
	}
	return errors.Join(errs...)
}

// maxGlobalSettings bounds the copy of a CLI's global settings file.
const maxGlobalSettings = 64 << 20
