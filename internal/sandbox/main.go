package sandbox

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// errHalfConfined: the child's confinement failed after part of it held,
// so the command is not started even where unsandboxed runs are allowed
// (it would run neither confined nor as a plain run).
var errHalfConfined = errors.New("the sandbox was applied only in part")

// errNotEnforced: the kernel took no rules (no Landlock).
var errNotEnforced = errors.New("this kernel has no Landlock, so the run cannot be confined")

// errNoSeccomp: the kernel (or this architecture) has no seccomp filter.
var errNoSeccomp = errors.New("this Linux kernel has no seccomp filter (or the relay does not know this architecture), so the run's Unix sockets cannot be refused")

// restrictSelf and execProgram are what Main confines itself with and
// starts the CLI with (replaced in tests).
var (
	restrictSelf = restrict
	execProgram  = startProgram
)

// Main is the hidden verb Verb: it parses --rules JSON and the command after
// "--", confines itself to the rules and starts the command, and returns
// the exit code of this process: 126 when the command may not run
// unconfined, the confinement failed for another reason than a kernel
// without Landlock or seccomp (a rule path that cannot be opened, a
// confinement that held only in part) or the verb is misused; 127 when the
// command cannot be started. On Linux the command runs as a child while
// this process stays as the run's top process and reaps the command's
// whole process tree (see reaper_linux.go); once the command has ended,
// Main returns its exit code, or ends this process by the signal that
// killed it. Elsewhere the command replaces this process.
//
// An unconfined run (a kernel without Landlock or seccomp, and a worker
// that allows it) starts the CLI's plain command without the CLI home of
// its own (Rules.Env): like a plain run, it uses the user's.
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(Verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	rulesJSON := fs.String("rules", "", "the rules (JSON)")
	if err := fs.Parse(args); err != nil {
		return 126
	}
	cmd := fs.Args()
	var r Rules
	if err := json.Unmarshal([]byte(*rulesJSON), &r); err != nil || len(cmd) == 0 {
		fmt.Fprintln(stderr, "crosschat sandbox: usage: "+Verb+" --rules JSON -- PROGRAM [ARGS...]")
		return 126
	}
	// On Linux the confinement and the start happen on a thread of their
	// own, which ends once the command runs: no thread of the process that
	// supervises the command stays in the command's sandbox.
	return onOwnThread(func() int { return confineAndStart(r, cmd, stderr) })
}

// confineAndStart confines the calling thread to r and starts cmd from it,
// or runs cmd unconfined where r allows that; it returns only when cmd was
// not started (126 or 127, see Main).
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

// init runs the hidden verb before anything else of the program when our
// own binary (or a test binary linking this package) is started as
// `PROGRAM __sandbox …`: it confines itself and runs the CLI, then exits.
// Any other start returns at once.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Verb {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
}
