// Package sandbox confines a worker run's agent CLI to its folders: the
// system and the CLI's own installation read-only, the CLI's configuration
// and session folders, the run's working, extra and run folders and a
// private temporary folder read-write, and nothing else of the user's (not
// the relay's data folder, not the rest of the home folder, not other
// projects). The network stays open.
//
// On Linux it uses Landlock (github.com/landlock-lsm/go-landlock, whose one
// home this package is) and a seccomp filter refusing AF_UNIX sockets
// (socketFilter), as Landlock below ABI 9 does not govern connecting to a
// Unix socket by path, and changes to other processes' limits and
// priorities, which Landlock never governs: the worker starts our own
// binary with the hidden verb Verb (Main), which stays unconfined as the
// run's reaper and starts our binary once more with the hidden verb
// execVerb, which restricts itself and then execs the CLI, so neither the
// relay nor the process that supervises the run is ever restricted. On
// macOS the same rules become a sandbox-exec profile (Profile). Windows
// runs are not sandboxed.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Verb is the hidden command of our own binary that starts the CLI
// confined and, on Linux, supervises its whole process tree: `crosschat-relay
// __sandbox --rules JSON [--grace DURATION] -- PROGRAM ARGS…` (see Main).
const Verb = "__sandbox"

// TempDirName is the private temporary folder's name inside the run folder.
const TempDirName = "tmp"

// Rules are the paths a confined run may reach. Paths that do not exist
// are skipped when the rules are applied.
type Rules struct {
	// System are the system folders (read and execute).
	System []string `json:"system"`
	// Devices are read-write device files (/dev/null, /dev/urandom…).
	Devices []string `json:"devices,omitempty"`
	// RO are further read-and-execute paths: the CLI's installation, the
	// folders on PATH, the user's git configuration, paths the user allowed.
	RO []string `json:"ro"`
	// RW are read-write paths: the run's folders, the CLI's configuration
	// and session folders, paths the user allowed read-write.
	RW []string `json:"rw"`
	// TempDir becomes TMPDIR, TMP and TEMP of the CLI ("" keeps them).
	TempDir string `json:"tmp,omitempty"`
	// Env are further variables of the CLI: the CLI home of its own
	// (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME).
	Env map[string]string `json:"env,omitempty"`
	// Required refuses to start the CLI unless the rules are enforced.
	Required bool `json:"required"`
	// Fallback is the command (program and arguments) started instead when
	// the rules cannot be enforced and are not Required: the CLI's plain
	// arguments, not those meant for a confined run (ConfinedArgs).
	Fallback []string `json:"fallback,omitempty"`
	// Create are the CLI's own folders (among RW) made before the run
	// when missing: a confined CLI could not make them itself, as what
	// holds them (the home folder) is out of its reach.
	Create []string `json:"-"`
	// Private are the CLI's folders (among RW) in a place every user
	// writes (/tmp/codex-daemon-{uid}): made with mode 0700 when missing,
	// and dropped from RW unless they are a real folder (not a link) of the
	// user's with mode 0700, so another user's folder or link is never
	// allowed.
	Private []string `json:"-"`
	// homes are the CLI homes made before the run (see cliHome).
	homes []homeSetup
	// outputs are the run folder's files the run writes, made empty when
	// missing (a confined run cannot create a file in its run folder).
	outputs []string
}

// Wrapper wraps run commands in the sandbox; the app gives it to the worker.
type Wrapper struct {
	// Self is our own binary, started with Verb (Linux), unconfined: a run
	// whose read-write paths hold it (or the file its links lead to) is
	// refused, as the data folder is (see overlap).
	Self string
	// Protected are folders no run should reach (the relay's data folder): a
	// run whose allowed paths hold one says so in its log.
	Protected []string
	// GOOS is the system the rules are for; "" is runtime.GOOS.
	GOOS string
	// ABI returns the kernel's Landlock ABI version (0 without Landlock);
	// nil asks the kernel.
	ABI func() int
	// Seccomp reports whether the kernel takes the seccomp socket filter
	// that refuses Unix sockets by path (Linux); nil asks the kernel.
	Seccomp func() bool
	// UID returns the relay's effective user id; nil asks the system.
	UID func() int
	// Homes keeps each worker's own CLI home (Linux: Claude Code, Codex,
	// Gemini CLI), a folder per agent; "" gives each run a new one in its
	// run folder.
	Homes string
	// Settings is what a run gets of the user's CLI settings files that
	// its home would link: a file it changes (the relay's server entries
	// with the agent's token left out) is given as a copy, and the run gets
	// no rule for the user's own. Every copy has its relay credentials
	// hidden, with or without it.
	Settings SettingsFilter
}

// rootWarning is the run log's warning for a run of a relay running as root.
const rootWarning = "Warning: the relay runs as root, so this run can still read other processes' environment " +
	"(/proc/PID/environ, the relay's included, with CROSSCHAT_API_TOKEN if it is set there) and, as root, " +
	"change files' owners and modes in its folders. Run the relay as an ordinary user."

// Wrap returns the command that starts req's CLI in the sandbox, or the
// plain command with a warning where the run may go unsandboxed. It fails
// when the run must be sandboxed and cannot be.
func (w Wrapper) Wrap(req runspec.SandboxRequest) (runspec.Sandboxed, error) {
	goos := w.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	plain := runspec.Sandboxed{Program: req.Program, Args: req.Args, Warning: true}
	// The protected folders as named and as their links resolve.
	protected := slices.Concat(w.Protected, resolved(w.Protected, nil))
	rules := plan(req, goos, protected, w.Homes, w.Settings)
	var warning string
	// The paths the worker checked are given as they were checked, never
	// resolved again (see runspec.SandboxRequest.Resolved).
	keep := slices.Concat(rules.Private, checkedPaths(req))
	if goos == "linux" || goos == "darwin" {
		rules.RW, rules.RO = resolved(rules.RW, keep), resolved(rules.RO, keep)
		var err error
		if warning, err = w.overlap(req, rules); err != nil {
			return runspec.Sandboxed{}, err
		}
		for _, d := range systemPaths[goos] {
			if !slices.Contains(rules.System, d) {
				warning = strings.TrimSpace(warning + " " + fmt.Sprintf("Warning: the system folder %s holds the relay's data folder, so it is not allowed to the run (only the CLI's installation and the folders on PATH in it); move the data folder out of it if the run needs the rest.", d))
			}
		}
		if w.uid() == 0 {
			warning = strings.TrimSpace(warning + " " + rootWarning)
		}
		for _, d := range rules.Create {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return runspec.Sandboxed{}, fmt.Errorf("create the CLI's folder %s: %w", d, err)
			}
		}
		for _, p := range rules.outputs {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|syscallNoFollow, 0o600)
			if err != nil {
				return runspec.Sandboxed{}, fmt.Errorf("create the run's output %s: %w", p, err)
			}
			_ = f.Close()
		}
		for _, h := range rules.homes {
			msg, err := h.prepare()
			if err != nil {
				return runspec.Sandboxed{}, err
			}
			warning = strings.TrimSpace(warning + " " + msg)
		}
		for _, d := range rules.Private {
			if err := os.Mkdir(d, 0o700); (err != nil && !errors.Is(err, os.ErrExist)) || !privateDir(d, os.Getuid()) {
				rules.RW = slices.DeleteFunc(rules.RW, func(p string) bool { return p == d })
			}
		}
		// Again for the paths made just now, whose links (a home folder
		// under /home → /var/home) the child no longer follows.
		rules.RW, rules.RO = resolved(rules.RW, keep), resolved(rules.RO, keep)
		if _, err := w.overlap(req, rules); err != nil {
			return runspec.Sandboxed{}, err
		}
	}
	switch goos {
	case "linux":
		abi := w.abi()
		var missing, need string
		switch {
		case abi < 1:
			missing, need = "Landlock", "Linux 5.13 or later with landlock in its lsm= list"
		case !w.seccomp():
			missing, need = "seccomp filter", "CONFIG_SECCOMP_FILTER, on amd64 or arm64"
		}
		if missing != "" {
			if req.Config.AllowUnsandboxed {
				plain.Log = "Not sandboxed: this Linux kernel has no " + missing + ", and the worker allows runs without the sandbox, so this run can reach every file of the user."
				return plain, nil
			}
			return runspec.Sandboxed{}, fmt.Errorf("the worker's sandbox is on, but this Linux kernel has no %s (%s). Turn the worker's sandbox off, or allow it to run unsandboxed", missing, need)
		}
		if err := os.MkdirAll(rules.TempDir, 0o700); err != nil {
			return runspec.Sandboxed{}, fmt.Errorf("create the run's temporary folder: %w", err)
		}
		rules.TempDir = resolvedPath(rules.TempDir)
		rules.Required = !req.Config.AllowUnsandboxed
		if !rules.Required && req.ConfinedArgs != nil {
			rules.Fallback = append([]string{req.Program}, req.Args...)
		}
		b, err := json.Marshal(rules)
		if err != nil {
			return runspec.Sandboxed{}, fmt.Errorf("encode the sandbox rules: %w", err)
		}
		args := []string{Verb, "--rules", string(b)}
		if req.KillGrace > 0 {
			args = append(args, "--grace", ReaperGrace(req.KillGrace).String())
		}
		args = append(append(args, "--", req.Program), confinedArgs(req)...)
		return confined(runspec.Sandboxed{Program: w.Self, Args: args}, rules, fmt.Sprintf("Landlock ABI %d, seccomp", abi), warning), nil
	case "darwin":
		if err := os.MkdirAll(rules.TempDir, 0o700); err != nil {
			return runspec.Sandboxed{}, fmt.Errorf("create the run's temporary folder: %w", err)
		}
		args := append([]string{"-p", Profile(rules), "/usr/bin/env",
			"TMPDIR=" + rules.TempDir, "TMP=" + rules.TempDir, "TEMP=" + rules.TempDir, req.Program}, confinedArgs(req)...)
		return confined(runspec.Sandboxed{Program: "/usr/bin/sandbox-exec", Args: args}, rules, "sandbox-exec", warning), nil
	default:
		plain.Log = fmt.Sprintf("Not sandboxed: runs on %s have no sandbox, so this run can reach every file of the user (the job object still stops its whole process tree).", displayOS(goos))
		return plain, nil
	}
}

// ReaperGrace is the grace the Linux sandbox child gives a stopped run
// before it kills the run's whole tree, for a worker that kills the run's
// process group killGrace after SIGTERM: a fifth shorter (at most a second
// shorter), so the child ends the tree, a CLI that left the group
// included, before the worker's SIGKILL ends the child.
func ReaperGrace(killGrace time.Duration) time.Duration {
	return killGrace - min(killGrace/5, time.Second)
}

// confined fills the log line of a confined command; warning ("" for none)
// is added to it.
func confined(s runspec.Sandboxed, r Rules, how, warning string) runspec.Sandboxed {
	s.Confined = true
	s.Log = fmt.Sprintf("Sandboxed (%s): paths read-write %s; read-only %s and the system folders.",
		how, strings.Join(r.RW, ", "), orNone(r.RO))
	s.Detail = "system (read-only): " + strings.Join(r.System, ", ")
	if len(r.Devices) > 0 {
		s.Detail += "\ndevices (read-write): " + strings.Join(r.Devices, ", ")
	}
	if warning != "" {
		s.Log += " " + warning
		s.Warning = true
	}
	return s
}

// overlap checks that no path of the rules holds a protected folder (the
// relay's data folder), that none but the run's own (its run folder, its
// CLI home) lies inside one (the database, the admin token, the other
// runs' folders, the other workers' CLI homes), and that no read-write
// path holds the relay's own program (Self, as named and as its links
// resolve), which the worker starts unconfined for every run: a run that
// could replace it (a relay built in a project that is also a worker's
// folder) would own every later run. Replacing the file takes write access
// to it or to its folder, and a rule that holds the folder holds the file
// too. A path the operator allowed explicitly (one of the worker's allowed
// paths that, as the operator typed it, is, holds or lies inside what it
// reaches) gives a warning for the run's log; any other (a working or
// extra folder, an allowed path that reaches it only through a link, a
// CLI's folder named by a variable) refuses the run.
func (w Wrapper) overlap(req runspec.SandboxRequest, r Rules) (string, error) {
	// The allowed paths as typed, by the rule path each became.
	typed := map[string][]string{}
	for _, a := range req.Config.AllowPaths {
		p, _ := relay.CutAllowPath(a)
		if filepath.IsAbs(p) {
			rule := allowedRule(req, p)
			p = filepath.Clean(p)
			typed[rule] = append(typed[rule], p)
		}
	}
	// explicit reports whether rule path a is an allowed path the operator
	// typed as one of forms (a folder as named, and as it resolves), a
	// folder holding it or a path inside it.
	explicit := func(a string, forms []string) bool {
		for _, t := range typed[a] {
			for _, f := range forms {
				if within(f, t) || within(t, f) {
					return true
				}
			}
		}
		return false
	}
	var warnings []string
	// check refuses (or, for a path allowed explicitly, warns of) the
	// first of paths that holds forms' folder, or with inside also lies
	// inside it; what names it in the messages.
	check := func(forms []string, what string, paths []string, inside bool) error {
		p := forms[len(forms)-1]
		for _, a := range paths {
			holds, in := within(p, a), inside && within(a, p)
			if !holds && !in {
				continue
			}
			if !explicit(a, forms) {
				if in {
					return fmt.Errorf("the run would reach %s inside %s, so it was not started: choose a path outside it, or add %s to the worker's allowed paths to accept that the run can reach it", a, what, a)
				}
				return fmt.Errorf("the run would reach %s through %s, so it was not started: choose a folder that does not hold it, or add %s to the worker's allowed paths to accept that the run can reach it", what, a, a)
			}
			if in {
				warnings = append(warnings, fmt.Sprintf("Warning: the allowed path %s lies inside %s, so this run can reach it.", a, what))
			} else {
				warnings = append(warnings, fmt.Sprintf("Warning: the allowed path %s holds %s, so this run can reach it.", a, what))
			}
			return nil
		}
		return nil
	}
	// The run's own paths inside the data folder: its run folder and CLI home.
	own := []string{resolvedPath(req.RunDir)}
	for _, h := range r.homes {
		own = append(own, resolvedPath(h.home))
	}
	all := slices.Concat(r.System, r.Devices, r.RO, r.RW)
	configured := map[string]bool{folderRule(req, req.Workdir): true}
	for _, d := range req.ExtraDirs {
		configured[folderRule(req, d)] = true
	}
	for a := range typed {
		configured[a] = true
	}
	notOwn := slices.DeleteFunc(slices.Clone(all), func(a string) bool {
		return !configured[a] && slices.ContainsFunc(own, func(o string) bool { return req.RunDir != "" && within(a, o) })
	})
	for _, p := range w.Protected {
		if p == "" {
			continue
		}
		forms := slices.Compact([]string{filepath.Clean(p), resolvedPath(p)})
		what := "the relay's data folder " + forms[len(forms)-1]
		if err := check(forms, what, all, false); err != nil {
			return "", err
		}
		if err := check(forms, what, notOwn, true); err != nil {
			return "", err
		}
	}
	if w.Self != "" {
		self := filepath.Clean(w.Self)
		for _, p := range slices.Compact([]string{self, resolvedPath(self)}) {
			what := "the relay's own program " + p + " read-write (the relay starts it unconfined for every run, so a run that replaces it owns every later run)"
			if err := check(slices.Compact([]string{self, p}), what, r.RW, false); err != nil {
				return "", err
			}
		}
	}
	return strings.Join(slices.Compact(warnings), " "), nil
}

// resolved replaces each path by the one its symbolic links lead to, so
// the protected-folder check and the rules see where a link really goes
// (Landlock follows a link to its target): a working folder that is a
// link to the relay's data folder is that folder. Paths among keep (the
// CLI's private folders, which are refused when they are links) and paths
// that do not exist yet stay as they are; a path repeated after resolving
// is dropped.
func resolved(paths, keep []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !slices.Contains(keep, p) {
			p = resolvedPath(p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// checkedPaths are the paths of req the worker resolved and checked
// (none when it did not say so): its folders and where its allowed paths
// led.
func checkedPaths(req runspec.SandboxRequest) []string {
	if req.Resolved == nil {
		return nil
	}
	out := append([]string{filepath.Clean(req.Workdir)}, req.ExtraDirs...)
	for _, p := range req.Resolved {
		out = append(out, filepath.Clean(p))
	}
	return out
}

// folderRule is the rule path of the run's working or extra folder d: d
// itself where the worker checked it (req.Resolved), else where its
// links lead now.
func folderRule(req runspec.SandboxRequest, d string) string {
	if req.Resolved != nil {
		return filepath.Clean(d)
	}
	return resolvedPath(d)
}

// allowedRule is the rule path of the allowed path p (as configured):
// where it led when the worker checked it, else where its links lead now.
func allowedRule(req runspec.SandboxRequest, p string) string {
	if r, ok := req.Resolved[p]; ok {
		return filepath.Clean(r)
	}
	if r, ok := req.Resolved[filepath.Clean(p)]; ok {
		return filepath.Clean(r)
	}
	return resolvedPath(filepath.Clean(p))
}

// resolvedPath is path with its symbolic links followed, or path itself
// when it cannot be resolved (it does not exist yet).
func resolvedPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// confinedArgs are the CLI's arguments for a confined run.
func confinedArgs(req runspec.SandboxRequest) []string {
	if req.ConfinedArgs != nil {
		return req.ConfinedArgs
	}
	return req.Args
}

func (w Wrapper) uid() int {
	if w.UID != nil {
		return w.UID()
	}
	return os.Geteuid()
}

func (w Wrapper) seccomp() bool {
	if w.Seccomp != nil {
		return w.Seccomp()
	}
	return Seccomp()
}

func (w Wrapper) abi() int {
	if w.ABI != nil {
		return w.ABI()
	}
	return ABI()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing else"
	}
	return strings.Join(s, ", ")
}

func displayOS(goos string) string {
	switch goos {
	case "windows":
		return "Windows"
	case "darwin":
		return "macOS"
	}
	return goos
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}
