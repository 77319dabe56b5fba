package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// systemPaths are the folders every run reads and executes from, per system.
var systemPaths = map[string][]string{
	"linux": {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
		"/nix/store", "/snap", "/run/systemd/resolve", "/proc", "/sys"},
	"darwin": {"/usr", "/bin", "/sbin", "/System", "/Library", "/Applications", "/opt",
		"/private/etc", "/etc", "/private/var/db/timezone", "/var/db/timezone", "/dev"},
}

// devicePaths are the devices a run reads and writes: only the harmless
// ones, never a terminal (/dev/tty, whose TIOCSTI would type into the
// user's shell) nor the rest of /dev, and no device ioctls.
var devicePaths = map[string][]string{
	"linux": {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"},
}

// presetPaths are, per preset, the CLI's folders under the home folder and
// the variables naming such folders elsewhere.
var presetPaths = map[string]struct {
	// home are read-write: caches and state that configure nothing.
	home []string
	// config are the CLI's settings and session folders: read-write where
	// the preset has no home of its own (cliHomes; macOS, the presets
	// without one), else read-only (the run writes its own home).
	config []string
	env    []string
	// abs are absolute folders ({uid} is the user's id), read-write.
	abs []string
}{
	"claude-code": {
		home:   []string{".cache/claude", ".cache/claude-cli-nodejs", ".local/state/claude"},
		config: []string{".claude", ".claude.json", ".claude.json.backup", ".config/claude", ".local/share/claude"},
		env:    []string{"CLAUDE_CONFIG_DIR"},
	},
	"codex": {
		home:   []string{".cache/codex"},
		config: []string{".codex"},
		env:    []string{"CODEX_HOME"},
		// Codex's sandbox helper keeps its state here, whatever TMPDIR says.
		abs: []string{"/tmp/codex-daemon-{uid}"},
	},
	"gemini": {
		home:   []string{".cache/gemini"},
		config: []string{".gemini", ".config/gemini"},
		env:    []string{"GEMINI_CLI_HOME"},
	},
	"opencode": {
		config: []string{".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"},
		env:    []string{"OPENCODE_CONFIG_DIR"},
	},
	"zcode":     {config: []string{".zcode", ".config/zcode"}},
	"codewhale": {config: []string{".codewhale", ".deepseek", ".config/codewhale"}},
}

// homeReadOnly are what every run may read in the home folder: the user's
// git configuration (git refuses to run when it cannot read it).
var homeReadOnly = []string{".gitconfig", ".config/git"}

// Plan computes a run's rules on goos: the system read-only, the CLI's
// installation and the folders on PATH read-only; by preset, the CLI's
// caches read-write and its configuration folders read-only with a CLI
// home of the run's own read-write (cliHomes, Linux) or, without one,
// read-write; the run's working and extra folders, its outputs and its
// private temporary folder read-write, the rest of its run folder
// read-only; and the worker's allowed paths. Paths are cleaned and listed
// once, in order.
func Plan(req runspec.SandboxRequest, goos string) Rules {
	return plan(req, goos, nil, "", nil)
}

// plan is Plan with the folders no run should reach (the relay's data
// folder): a folder of the CLI's installation or on PATH that holds one of
// them, or the home folder, is never allowed whole.
//
// homes is where the workers' own CLI homes are kept ("" for one in each
// run folder); settings what a run gets of the user's settings files (nil:
// they are given with their relay credentials hidden only).
func plan(req runspec.SandboxRequest, goos string, protected []string, homes string, settings SettingsFilter) Rules {
	env := envMap(req.Env)
	home := env["HOME"]
	// tooBroad: a folder that is, or holds, the home folder or a protected
	// folder, or is the root.
	holdsProtected := func(d string) bool {
		return slices.ContainsFunc(protected, func(p string) bool { return p != "" && within(p, filepath.Clean(d)) })
	}
	tooBroad := func(d string) bool {
		d = filepath.Clean(d)
		return d == string(filepath.Separator) || (home != "" && within(home, d)) || holdsProtected(d)
	}
	// A system folder holding a protected folder (a data folder under
	// /opt) is not allowed whole: the CLI's installation and the folders
	// on PATH in it get rules of their own (when they do not hold it).
	r := Rules{System: slices.DeleteFunc(slices.Clone(systemPaths[goos]), holdsProtected), Devices: slices.Clone(devicePaths[goos])}
	if req.RunDir != "" {
		r.TempDir = filepath.Join(req.RunDir, TempDirName)
	}
	var ro, rw []string
	r.Create = []string{}

	// The CLI's own installation: its folder and, through symbolic links,
	// the folder of what it points at; only the program file itself where
	// that folder is too broad (a custom program kept in the home folder).
	if req.Program != "" {
		if d := filepath.Dir(req.Program); tooBroad(d) {
			ro = append(ro, req.Program)
		} else {
			ro = append(ro, d)
		}
		if real, err := filepath.EvalSymlinks(req.Program); err == nil {
			if root := installRoot(real); tooBroad(root) {
				ro = append(ro, real)
			} else {
				ro = append(ro, root)
			}
		}
	}
	// The folders on PATH (node, git and the tools a CLI runs), but never
	// the home folder or what holds it, nor what holds a protected folder.
	for _, d := range filepath.SplitList(env["PATH"]) {
		if !filepath.IsAbs(d) || tooBroad(d) {
			continue
		}
		ro = append(ro, d)
		// A tool manager's bin folder (~/.nvm/versions/node/v22/bin) keeps
		// its libraries beside it.
		if parent := filepath.Dir(d); home != "" && filepath.Base(d) == "bin" && within(parent, home) &&
			parent != home && parent != filepath.Join(home, ".local") {
			ro = append(ro, parent)
		}
	}
	if home != "" {
		for _, p := range homeReadOnly {
			ro = append(ro, filepath.Join(home, p))
		}
	}
	if pp, ok := presetPaths[req.Config.Harness]; ok {
		ch, own := cliHomes[req.Config.Harness]
		own = own && goos == "linux" && home != ""
		config := &rw
		if own {
			config = &ro
		}
		if home != "" {
			for _, p := range pp.home {
				rw = append(rw, filepath.Join(home, p))
				r.Create = append(r.Create, filepath.Join(home, p))
			}
			for _, p := range pp.config {
				if own && ch.userFolder(filepath.Join(home, p), env, home) {
					continue // reached through its linked entries (planHome)
				}
				*config = append(*config, filepath.Join(home, p))
				if !own && !strings.Contains(filepath.Base(p), ".json") {
					r.Create = append(r.Create, filepath.Join(home, p))
				}
			}
		}
		for _, p := range pp.abs {
			// A folder in a place every user writes (/tmp): made private
			// when missing, and allowed only if it is a real folder of the
			// user's that no one else may enter (see Wrapper.Wrap).
			p = strings.ReplaceAll(p, "{uid}", strconv.Itoa(os.Getuid()))
			rw = append(rw, p)
			r.Private = append(r.Private, filepath.Clean(p))
		}
		for _, name := range pp.env {
			if v := env[name]; filepath.IsAbs(v) && !(own && ch.userFolder(v, env, home)) {
				*config = append(*config, v)
				if !own {
					r.Create = append(r.Create, filepath.Clean(v))
				}
			}
		}
		if own {
			private := filepath.Join(req.RunDir, HomeDirName, req.Config.Harness)
			if slug := req.Config.AgentSlug; homes != "" && homeSlug(slug) {
				private = filepath.Join(homes, slug, req.Config.Harness)
			}
			folders := []string{folderRule(req, req.Workdir)}
			for _, d := range req.ExtraDirs {
				folders = append(folders, folderRule(req, d))
			}
			hro, hrw := planHome(&r, ch, env, home, private, folders, req.Config.Harness, req.Server, settings)
			ro, rw = append(ro, hro...), append(rw, hrw...)
		}
	}
	rw = append(rw, req.Workdir)
	rw = append(rw, req.ExtraDirs...)
	// The run folder is read-only to the run (its prompt, its MCP
	// configuration with the run's token, the CLI's run settings), but for
	// the files it writes (the result file), its temporary folder and its
	// CLI home.
	ro = append(ro, req.RunDir)
	for _, o := range req.Outputs {
		if filepath.IsAbs(o) && within(o, req.RunDir) && o != req.RunDir {
			rw = append(rw, o)
			r.outputs = append(r.outputs, filepath.Clean(o))
		}
	}
	for _, a := range req.Config.AllowPaths {
		p, write := relay.CutAllowPath(a)
		if r, ok := req.Resolved[p]; ok {
			p = r // where it led when the worker checked it
		}
		if write {
			rw = append(rw, p)
		} else {
			ro = append(ro, p)
		}
	}
	r.RW = unique(rw, nil)
	r.RO = unique(ro, slices.Concat(r.RW, r.System))
	return r
}

// installRoot is the folder of a CLI's real executable or, for a package
// under node_modules, the whole node_modules folder it lies in: a CLI's
// dependencies and platform binaries are its siblings there (npm hoists
// them), which it reads and executes.
func installRoot(real string) string {
	slash := filepath.ToSlash(real)
	if i := strings.Index(slash, "/node_modules/"); i >= 0 {
		return filepath.FromSlash(slash[:i] + "/node_modules")
	}
	return filepath.Dir(real)
}

// unique cleans paths and drops empty, relative and repeated ones, and
// those inside any of covered.
func unique(paths, covered []string) []string {
	out := []string{}
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if slices.Contains(out, p) || slices.ContainsFunc(covered, func(c string) bool { return within(p, c) }) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// envMap turns "NAME=value" entries into a map (the last one wins).
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
