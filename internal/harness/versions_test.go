package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
)

// Ensure the tested ranges are the two CI lanes' pins: the oldest version
// is .ci/clis's, the newest .ci/clis-current's. Moving a pin without the
// range (or the other way round) fails here.
func TestTestedRangesMatchThePins(t *testing.T) {
	pins := func(lane string) map[string]string {
		b, err := os.ReadFile(filepath.Join("..", "..", ".ci", lane, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		var pkg struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			t.Fatalf("%s/package.json: %v", lane, err)
		}
		return pkg.Dependencies
	}
	oldest, current := pins("clis"), pins("clis-current")
	for id, pkg := range map[string]string{
		harness.ClaudeCode: "@anthropic-ai/claude-code",
		harness.Codex:      "@openai/codex",
		harness.Gemini:     "@google/gemini-cli",
	} {
		r, ok := harness.Tested(id)
		if !ok {
			t.Errorf("%s: no tested range", id)
			continue
		}
		if r.Oldest != oldest[pkg] || r.Newest != current[pkg] {
			t.Errorf("%s: tested range %s, want %s–%s (the pins of %s in .ci/clis and .ci/clis-current)", id, r, oldest[pkg], current[pkg], pkg)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		id, line, want string
	}{
		{harness.ClaudeCode, "2.1.197 (Claude Code)", harness.VersionTested},
		{harness.ClaudeCode, "2.1.250 (Claude Code)", harness.VersionTested},
		{harness.ClaudeCode, "2.1.332 (Claude Code)", harness.VersionTested},
		{harness.ClaudeCode, "2.1.333 (Claude Code)", harness.VersionNewer},
		{harness.ClaudeCode, "2.10.0 (Claude Code)", harness.VersionNewer},
		{harness.ClaudeCode, "2.1.99 (Claude Code)", harness.VersionOlder},
		{harness.Codex, "codex-cli 0.171.0", harness.VersionTested},
		{harness.Codex, "codex-cli 0.172.0", harness.VersionNewer},
		{harness.Gemini, "0.60.9", harness.VersionOlder},
		{harness.ClaudeCode, "", ""},
		{harness.ClaudeCode, "Claude Code (dev build)", ""},
		{harness.OpenCode, "opencode 1.0.0", ""},
	} {
		if got := harness.CheckVersion(tc.id, tc.line); got != tc.want {
			t.Errorf("CheckVersion(%s, %q) = %q, want %q", tc.id, tc.line, got, tc.want)
		}
		note := harness.UntestedNote(tc.id, tc.line)
		untested := tc.want == harness.VersionNewer || tc.want == harness.VersionOlder
		if untested != (note != "") || untested && (!strings.Contains(note, harness.VersionNumber(tc.line)) || !strings.Contains(note, "goes ahead")) {
			t.Errorf("UntestedNote(%s, %q) = %q", tc.id, tc.line, note)
		}
	}
}

// Ensure detection reports the tested range and where the version lies,
// and the run log's note reads the program's version once per build of it.
func TestVersionDetectionAndNote(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the fake programs")
	}
	bin := t.TempDir()
	count := filepath.Join(t.TempDir(), "count")
	claude := script(t, filepath.Join(bin, "claude"), "#!/bin/sh\necho x >> "+count+"\necho '2.1.400 (Claude Code)'\n", 0o755)
	script(t, filepath.Join(bin, "codex"), "#!/bin/sh\necho 'codex-cli 0.171.0'\n", 0o755)
	got := byID(harness.Detect(context.Background(), harness.Env{PATH: bin, Home: t.TempDir(), GOOS: "linux"}))
	if d := got[harness.ClaudeCode]; d.Tested != harness.VersionNewer || d.TestedRange != "2.1.197–2.1.332" {
		t.Errorf("claude: tested %q range %q", d.Tested, d.TestedRange)
	}
	if d := got[harness.Codex]; d.Tested != harness.VersionTested || d.TestedRange != "0.171.0" {
		t.Errorf("codex: tested %q range %q", d.Tested, d.TestedRange)
	}
	if d := got[harness.OpenCode]; d.Tested != "" || d.TestedRange != "" {
		t.Errorf("opencode: tested %q range %q", d.Tested, d.TestedRange)
	}

	os.Remove(count)
	var c harness.VersionCache
	for range 3 {
		note := c.Note(context.Background(), harness.ClaudeCode, claude)
		if !strings.Contains(note, "Claude Code 2.1.400 is newer than the versions this relay was tested with (2.1.197–2.1.332)") {
			t.Fatalf("note %q", note)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 1 {
		t.Errorf("--version ran %d times for three runs of one program, want once", strings.Count(string(b), "x"))
	}
	if note := c.Note(context.Background(), harness.Codex, filepath.Join(bin, "codex")); note != "" {
		t.Errorf("a tested version gets a note: %q", note)
	}
}
