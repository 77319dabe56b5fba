package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Ensure a run of a Claude Code outside the tested range gets one note for
// its run log (on the build with the prompt, not the worker's first build
// without it), a tested one none, and the run is never refused.
func TestHarnessAdapterNotesUntestedVersion(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the fake program")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		version string
		note    bool
	}{{"2.1.999 (Claude Code)", true}, {"2.1.332 (Claude Code)", false}, {"2.0.1 (Claude Code)", true}} {
		program := filepath.Join(dir, strings.Fields(tc.version)[0], "claude")
		if err := os.MkdirAll(filepath.Dir(program), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(program, []byte("#!/bin/sh\necho '"+tc.version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		a := newHarnessAdapter()
		req := runspec.Request{Config: relay.WorkerConfig{Harness: harness.ClaudeCode, Command: program, Workdir: dir},
			RunDir: dir, MCPURL: "http://127.0.0.1:1/mcp"}
		first, err := a.Build(req)
		if err != nil || len(first.Notes) != 0 {
			t.Fatalf("%s: first build: notes %q, %v", tc.version, first.Notes, err)
		}
		req.Prompt = "## Task\n"
		spec, err := a.Build(req)
		if err != nil || spec.Program == "" {
			t.Fatalf("%s: build: %+v, %v", tc.version, spec, err)
		}
		if got := len(spec.Notes) == 1 && strings.Contains(spec.Notes[0], "tested with (2.1.197–2.1.332)"); got != tc.note || len(spec.Notes) > 1 {
			t.Errorf("%s: notes %q, want a note: %v", tc.version, spec.Notes, tc.note)
		}
	}
}
