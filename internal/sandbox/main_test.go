package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"
	"testing"
)

// Ensure the child falls back to an unconfined run only where the kernel
// has no Landlock or seccomp and the worker allows it, and then without
// the CLI home of its own (its CLAUDE_CONFIG_DIR) and with the plain
// command; any other confinement error (a rule that cannot be built, a
// confinement that held in part) or a run that requires the sandbox exits
// 126 without starting the CLI.
func TestMainFallback(t *testing.T) {
	build := fmt.Errorf("build the Landlock rules: %w", syscall.ELOOP)
	tests := []struct {
		name     string
		err      error
		required bool
		// want is the exit code; cmd the program started ("" for none);
		// home whether CLAUDE_CONFIG_DIR is the run's.
		want int
		cmd  string
		home bool
	}{
		{"confined", nil, false, 127, "confined-cli", true},
		{"no Landlock, allowed", errNotEnforced, false, 127, "plain-cli", false},
		{"no seccomp, allowed", errNoSeccomp, false, 127, "plain-cli", false},
		{"no Landlock, required", errNotEnforced, true, 126, "", false},
		{"rule error, allowed", build, false, 126, "", false},
		{"rule error, required", build, true, 126, "", false},
		{"half confined, allowed", fmt.Errorf("%w: %w", errHalfConfined, syscall.EINVAL), false, 126, "", false},
	}
	defer func(r func(Rules) error, e func(string, []string, []string) error) { restrictSelf, execProgram = r, e }(restrictSelf, execProgram)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var started string
			var env []string
			restrictSelf = func(Rules) error { return tt.err }
			execProgram = func(program string, _, e []string) error {
				started, env = program, e
				return errors.New("not started in the test")
			}
			rules, err := json.Marshal(Rules{Required: tt.required, Fallback: []string{"plain-cli"},
				Env: map[string]string{"CLAUDE_CONFIG_DIR": "/run/home"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := execMain([]string{"--rules", string(rules), "--", "confined-cli"}, io.Discard); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
			if started != tt.cmd {
				t.Errorf("started %q, want %q", started, tt.cmd)
			}
			if got := slices.Contains(env, "CLAUDE_CONFIG_DIR=/run/home"); got != tt.home {
				t.Errorf("the run's CLAUDE_CONFIG_DIR in the environment: %v, want %v", got, tt.home)
			}
		})
	}
}
