package worker

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// sandbox wraps the CLI's command in the sandbox when the worker has it on
// (Options.Sandbox), and records in the run log how the run is confined,
// or that it is not. confined (nil: args) are the CLI's arguments for a
// run the sandbox actually confines; outputs are the files of the run
// folder the run writes (the result file), the rest being read-only to it.
func (r *runState) sandbox(program string, args, confined, env, extra, outputs []string) (string, []string, error) {
	o := r.w.m.opts
	if !r.cfg.SandboxOn() {
		return program, args, nil
	}
	if o.Sandbox == nil {
		// Never silently unconfined: a worker whose sandbox is on does not
		// run in a relay that has no sandbox to give it.
		return "", nil, errors.New("sandbox: the worker's sandbox is on, but this relay has none to run it in; the run was not started")
	}
	s, err := o.Sandbox(runspec.SandboxRequest{
		Config: r.cfg, Program: program, Args: args, ConfinedArgs: confined, Env: env,
		Workdir: cmp.Or(r.workdir, r.cfg.Workdir), ExtraDirs: extra, RunDir: r.runDir, Outputs: outputs, KillGrace: o.KillGrace,
		Resolved: r.allowed, Server: r.server,
	})
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	switch {
	case s.Confined:
		r.sandboxed = true
		e := relay.ActivityEntry{Kind: relay.StepSandbox, Status: relay.StepOK, Text: s.Log, Detail: s.Detail}
		r.rec.add(e)
		if s.Warning {
			r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Text: s.Log})
		}
	default:
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Text: s.Log})
	}
	if s.Program == "" {
		return "", nil, errors.New("sandbox: no program to start")
	}
	return s.Program, s.Args, nil
}

// refusedPatterns find a path the system refused in a program's output: a
// shell's and coreutils' "PATH: Permission denied", "cannot open 'PATH'
// … Permission denied", Node's "EACCES: permission denied, open 'PATH'",
// Python's "[Errno 13] Permission denied: 'PATH'" and Rust's "Permission
// denied (os error 13)" after a path.
var refusedPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(?:EACCES|EPERM): (?:permission denied|operation not permitted), \w+ '([^'\n]+)'`),
	regexp.MustCompile(`(?i)\[Errno 1[3]\] Permission denied: '([^'\n]+)'`),
	regexp.MustCompile(`(?:cannot|can't|unable to) (?:open|create|access|read|write|stat|remove|touch)[^'"\n]*['"‘“]([^'"’”\n]+)['"’”][^\n]*(?i:permission denied)`),
	regexp.MustCompile(`(/[^\s:'"]+): (?i:permission denied)`),
}

// refusedPaths are the absolute paths the CLI's output says it was refused,
// at most max, in order of appearance.
func refusedPaths(text string, max int) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, re := range refusedPatterns {
			m := re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			// The sandbox runs on Linux and macOS only: the paths its
			// refusals name are slash paths on every system the relay
			// reads them on.
			p := path.Clean(strings.TrimSpace(m[1]))
			if path.IsAbs(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
			break
		}
		if len(out) >= max {
			break
		}
	}
	return out
}

// maxRefused bounds the refused paths a blocked run names.
const maxRefused = 5

// sandboxHint is what a blocker of a sandboxed run adds: the paths the
// system refused, and how to allow one; "" when the output names none.
func sandboxHint(stdout, stderr string) string {
	paths := refusedPaths(stderr+"\n"+stdout, maxRefused)
	if len(paths) == 0 {
		return ""
	}
	return fmt.Sprintf("The sandbox refused: %s. If the run needs it, add it to the worker's allowed paths (workers set --allow-path PATH, or PATH:rw to write).",
		strings.Join(paths, ", "))
}
