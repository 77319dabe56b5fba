package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// workers set on an agent that has a worker changes only the settings its
// flags name: it used to save the flags' defaults over the rest (an earlier
// --allow-sender and --env dropped, the timeout back to 30 min) and to
// refuse without --harness and --workdir. A repeatable flag given replaces
// its list; a new worker still needs --harness and --workdir.
func TestWorkersSetChangesOnlyTheFlagsGiven(t *testing.T) {
	r := startRelay(t)
	for _, slug := range []string{"builder", "api"} {
		createAgent(t, r, slug)
	}
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	work := t.TempDir()
	steps := []struct {
		name  string
		args  []string
		code  int
		check func(w relay.WorkerConfig) bool
	}{
		{"a new worker needs --harness and --workdir", []string{"--timeout", "5m"}, 2, nil},
		{"create", []string{"--harness", "custom", "--command", "/bin/cat", "--workdir", work, "--allow-sender", "operator", "--allow-sender", "api", "--env", "FOO", "--timeout", "5m", "--enabled=false"},
			0, func(w relay.WorkerConfig) bool {
				return w.Command == "/bin/cat" && len(w.AllowedSenders) == 2 && slices.Equal(w.Env, []string{"FOO"}) && w.TimeoutMinutes == 5 && !w.Enabled
			}},
		{"one flag changes one setting", []string{"--runs-per-hour", "7"},
			0, func(w relay.WorkerConfig) bool {
				return w.RunsPerHour == 7 && w.Harness == "custom" && w.Workdir == work && w.Command == "/bin/cat" &&
					slices.Equal(w.AllowedSenders, []string{"operator", "api"}) && slices.Equal(w.Env, []string{"FOO"}) && w.TimeoutMinutes == 5 && !w.Enabled
			}},
		{"a list given replaces the list", []string{"--env", "BAR", "--enabled"},
			0, func(w relay.WorkerConfig) bool {
				return slices.Equal(w.Env, []string{"BAR"}) && w.Enabled && len(w.AllowedSenders) == 2 && w.RunsPerHour == 7
			}},
		{"a bad value changes nothing", []string{"--allow-sender", "nobody"}, 1, func(w relay.WorkerConfig) bool {
			return slices.Equal(w.AllowedSenders, []string{"operator", "api"})
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			_, errs, code := run(t, append(append([]string{"workers", "set", "builder"}, s.args...), loc...)...)
			if code != s.code {
				t.Fatalf("exit %d, want %d: %q", code, s.code, errs)
			}
			if s.check == nil {
				return
			}
			out, err := r.Services.Workers.List()
			noErr(t, err)
			if len(out.Workers) != 1 || !s.check(out.Workers[0].WorkerConfig) {
				t.Errorf("saved %+v", out.Workers)
			}
		})
	}
}

// workers set with another --harness drops the old CLI's program (the saved
// path, which the new CLI's arguments would have run) and looks the new one
// up, unless --command is given; the sandbox stays as it was, not the new
// CLI's default.
func TestWorkersSetAnotherHarnessLooksItsProgramUp(t *testing.T) {
	bin := t.TempDir()
	codex := filepath.Join(bin, "codex")
	noErr(t, os.WriteFile(codex, []byte("#!/bin/sh\necho codex-cli 0.171.0\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := startRelay(t)
	createAgent(t, r, "builder")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	work := t.TempDir()
	saved := func() relay.WorkerConfig {
		out, err := r.Services.Workers.List()
		noErr(t, err)
		if len(out.Workers) != 1 {
			t.Fatalf("workers %+v", out.Workers)
		}
		return out.Workers[0].WorkerConfig
	}
	set := func(args ...string) {
		t.Helper()
		if _, errs, code := run(t, append(append([]string{"workers", "set", "builder"}, args...), loc...)...); code != 0 {
			t.Fatalf("workers set %v: exit %d: %s", args, code, errs)
		}
	}
	set("--harness", "custom", "--command", "/bin/cat", "--arg", "{prompt_file}", "--workdir", work, "--enabled=false")
	before := saved()
	set("--harness", "codex")
	if w := saved(); w.Command != codex || len(w.Args) != 0 || w.SandboxOn() != before.SandboxOn() {
		t.Fatalf("after --harness codex: command %q, args %v, sandbox %v; want %s, none, %v as before", w.Command, w.Args, w.SandboxOn(), codex, before.SandboxOn())
	}
}
