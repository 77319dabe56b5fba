package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
)

// Ensure a relative PATH entry ("", ".", "bin") cannot make detection pick
// up a program planted in the folder the relay runs from (a cloned
// repository, say), while absolute entries still work.
func TestRelativePATHEntryCannotPlantAgentCLI(t *testing.T) {
	repo := t.TempDir()
	script(t, filepath.Join(repo, "claude"), "#!/bin/sh\necho planted\n", 0o755)
	script(t, filepath.Join(repo, "bin", "codex"), "#!/bin/sh\necho planted\n", 0o755)
	real := t.TempDir()
	script(t, filepath.Join(real, "gemini"), "#!/bin/sh\necho real\n", 0o755)
	t.Chdir(repo)
	for _, goos := range []string{"linux", "windows"} {
		sep := ":"
		if goos == "windows" {
			sep = ";"
		}
		env := harness.Env{PATH: "" + sep + "." + sep + "bin" + sep + real, Home: t.TempDir(), GOOS: goos,
			Run: func(context.Context, string, ...string) ([]byte, error) { return nil, os.ErrNotExist }}
		if p := harness.Find(harness.ClaudeCode, env); p != "" {
			t.Errorf("%s: claude found through a relative PATH entry: %s", goos, p)
		}
		if p := harness.Find(harness.Codex, env); p != "" {
			t.Errorf("%s: codex found through a relative PATH entry: %s", goos, p)
		}
		if p := harness.Find(harness.Gemini, env); p != filepath.Join(real, "gemini") {
			t.Errorf("%s: gemini on an absolute PATH entry: %q", goos, p)
		}
	}
}
