package cli_test

import (
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
