package sandbox

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// errHalfConfined: the child's confinement failed after part of it held,
// so the command is not started even where unsandboxed runs are allowed
// (it would run neither confined nor as a plain run).
var errHalfConfined = errors.New("the sandbox was applied only in part")

// errNotEnforced: the kernel took no rules (no Landlock).
var errNotEnforced = errors.New("this kernel has no Landlock, so the run cannot be confined")

// errNoSeccomp: the kernel (or this architecture) has no seccomp filter.
var errNoSeccomp = errors.New("this Linux kernel has no seccomp filter (or the relay does not know this architecture), so the run's Unix sockets cannot be refused")

// restrictSelf and execProgram are what the confining process confines
// itself with and replaces itself by the CLI with (replaced in tests).
var (
	restrictSelf = restrict
	execProgram  = execve
)

// execVerb is the hidden command the Linux sandbox child starts its own
// binary with to confine itself and exec the CLI (execMain): `PROGRAM
// __sandbox-exec --rules JSON -- PROGRAM ARGS…`. Started directly, it does
// only what the sandbox child of earlier versions did: it confines itself
// to the rules (or refuses to run, 126) and execs the command, so it gives
// nothing a caller could not get by running the command itself.
const execVerb = "__sandbox-exec"

// DefaultGrace is the grace of a stopped run's CLI before the Linux sandbox
// child kills the run's whole tree, when Verb is given no --grace: a little
// shorter than the worker's 5 s, so the child ends the tree (a CLI that
// left the run's process group too) before the worker kills the group.
const DefaultGrace = 4 * time.Second

// Main is the hidden verb Verb: it parses --rules JSON, --grace DURATION
// (DefaultGrace when missing) and the command after "--", confines the
// command to the rules and starts it, and returns the exit code of this
// process: 126 when the command may not run unconfined, the confinement
// failed for another reason than a kernel without Landlock or seccomp (a
// rule path that cannot be opened, a confinement that held only in part)
// or the verb is misused; 127 when the command cannot be started. On Linux
// this process is never confined: it starts its own binary with execVerb,
// which confines itself and execs the command, and stays as the run's top
// process to reap the command's whole process tree (see reaper_linux.go);
// once the command has ended, Main returns its exit code, or ends this
// process by the signal that killed it (or by a stop signal received
// before the command was started, which then is not started). Elsewhere (and on a Linux kernel
// without subreapers) this process confines itself and the command
// replaces it.
//
// An unconfined run (a kernel without Landlock or seccomp, and a worker
// that allows it) starts the CLI's plain command without the CLI home of
// its own (Rules.Env): like a plain run, it uses the user's.
func Main(args []string, stderr io.Writer) int {
	inv, code := parseArgs(Verb, args, stderr)
	if code != 0 {
		return code
	}
	return superviseRun(inv, stderr)
}

// execMain is the hidden verb execVerb: it parses the arguments as Main
// does (without --grace), confines this process to the rules and execs the
// command, or runs it unconfined where the rules allow that; it returns
// (126 or 127, see Main) only when the command was not started.
func execMain(args []string, stderr io.Writer) int {
	inv, code := parseArgs(execVerb, args, stderr)
	if code != 0 {
		return code
	}
	return confineAndStart(inv.rules, inv.cmd, stderr)
}

// invocation is what the verbs were given.
type invocation struct {
	rulesJSON string
	rules     Rules
	grace     time.Duration
	cmd       []string
}

// parseArgs parses a verb's arguments; a misuse returns 126.
func parseArgs(verb string, args []string, stderr io.Writer) (invocation, int) {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	rulesJSON := fs.String("rules", "", "the rules (JSON)")
	var grace *time.Duration
	if verb == Verb {
		grace = fs.Duration("grace", DefaultGrace, "how long a stopped run's CLI may take before its whole tree is killed")
	}
	if err := fs.Parse(args); err != nil {
		return invocation{}, 126
	}
	inv := invocation{rulesJSON: *rulesJSON, cmd: fs.Args()}
	if grace != nil {
		inv.grace = max(*grace, 0)
	}
	if err := json.Unmarshal([]byte(inv.rulesJSON), &inv.rules); err != nil || len(inv.cmd) == 0 {
		fmt.Fprintln(stderr, "crosschat sandbox: usage: "+verb+" --rules JSON -- PROGRAM [ARGS...]")
		return invocation{}, 126
	}
	return inv, 0
}

// confineAndStart confines this process (its calling thread, which then
// execs) to r and replaces it by cmd, or runs cmd unconfined where r
// allows that; it returns only when cmd was not started (126 or 127, see
// Main).
func confineAndStart(r Rules, cmd []string, stderr io.Writer) int {
	if err := restrictSelf(r); err != nil {
		if r.Required || !errors.Is(err, errNotEnforced) && !errors.Is(err, errNoSeccomp) {
			fmt.Fprintf(stderr, "crosschat sandbox: the run was not started: %v\n", err)
			return 126
		}
		fmt.Fprintf(stderr, "crosschat sandbox: warning: the run is not sandboxed: %v\n", err)
		if len(r.Fallback) > 0 {
			// The CLI's arguments for an unconfined run (Codex keeps its
			// own sandbox).
			cmd = r.Fallback
		}
		r.Env = nil
	}
	env := os.Environ()
	if r.TempDir != "" {
		env = setEnv(env, "TMPDIR", r.TempDir)
		env = setEnv(env, "TMP", r.TempDir)
		env = setEnv(env, "TEMP", r.TempDir)
	}
	for name, value := range r.Env {
		env = setEnv(env, name, value)
	}
	err := execProgram(cmd[0], cmd, env)
	fmt.Fprintf(stderr, "crosschat sandbox: start %s: %v\n", cmd[0], err)
	return 127
}

// setEnv replaces or adds NAME=value.
func setEnv(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// init runs the hidden verbs before anything else of the program when our
// own binary (or a test binary linking this package) is started as
// `PROGRAM __sandbox …` (the run's top process) or `PROGRAM __sandbox-exec
// …` (the process that confines itself and becomes the CLI), then exits.
// Any other start returns at once.
func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case Verb:
			os.Exit(Main(os.Args[2:], os.Stderr))
		case execVerb:
			os.Exit(execMain(os.Args[2:], os.Stderr))
		}
	}
}
