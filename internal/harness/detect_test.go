package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/harness"
)

func script(t *testing.T, path, body string, perm os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
	return path
}

func byID(ds []harness.Detected) map[string]harness.Detected {
	m := map[string]harness.Detected{}
	for _, d := range ds {
		m[d.ID] = d
	}
	return m
}

// Ensure detection finds fake programs on PATH and in known locations,
// reads their versions, never fails on a version it can't read, skips
// files that are not executable, and gives notes.
func TestDetect(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the fake programs")
	}
	home, bin1, bin2 := t.TempDir(), t.TempDir(), t.TempDir()
	script(t, filepath.Join(bin1, "claude"), "#!/bin/sh\necho '2.1.197 (Claude Code)'\n", 0o755)
	script(t, filepath.Join(bin2, "claude"), "#!/bin/sh\necho 'shadowed'\n", 0o755)
	script(t, filepath.Join(bin1, "gemini"), "#!/bin/sh\nexit 3\n", 0o755)
	script(t, filepath.Join(bin1, "opencode"), "#!/bin/sh\necho not executable\n", 0o644)
	script(t, filepath.Join(bin2, "codew"), "#!/bin/sh\necho\necho 'codewhale 0.4.1'\n", 0o755)
	script(t, filepath.Join(bin1, "cursor"), "#!/bin/sh\nsleep 10\n", 0o755)
	codex := script(t, filepath.Join(home, ".codex", ".sandbox-bin", "codex"), "#!/bin/sh\necho 'WARNING: helper'\necho 'codex-cli 0.171.0'\n", 0o755)
	env := harness.Env{PATH: strings.Join([]string{"", bin1, bin2}, string(os.PathListSeparator)), Home: home, GOOS: "linux"}
	start := time.Now()
	got := byID(harness.Detect(context.Background(), env))
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("detection took %v; the version timeout is not applied", d)
	}
	for _, tc := range []struct{ id, path, version string }{
		{harness.ClaudeCode, filepath.Join(bin1, "claude"), "2.1.197 (Claude Code)"},
		{harness.Codex, codex, "codex-cli 0.171.0"},
		{harness.Gemini, filepath.Join(bin1, "gemini"), ""},
		{harness.OpenCode, "", ""},
		{harness.Codewhale, filepath.Join(bin2, "codew"), "codewhale 0.4.1"},
		{harness.Cursor, filepath.Join(bin1, "cursor"), ""},
		{harness.ZCode, "", ""},
		{harness.Custom, "", ""},
	} {
		d, ok := got[tc.id]
		if !ok {
			t.Errorf("%s not listed", tc.id)
			continue
		}
		if d.Path != tc.path || d.Version != tc.version {
			t.Errorf("%s: path %q version %q, want %q %q", tc.id, d.Path, d.Version, tc.path, tc.version)
		}
		p, _ := harness.Lookup(tc.id)
		if d.Name != p.Name || d.CanRun != p.CanRun || d.ExtraDirs != p.ExtraDirs || d.Safety != p.Safety {
			t.Errorf("%s: %+v does not match its preset", tc.id, d)
		}
	}
	if !strings.Contains(got[harness.Codex].Note, "desktop app") {
		t.Errorf("codex note %q", got[harness.Codex].Note)
	}
	if harness.Find(harness.ClaudeCode, env) != filepath.Join(bin1, "claude") || harness.Find("nope", env) != "" {
		t.Error("Find disagrees with Detect")
	}
}

// Ensure known locations are searched after PATH, and ZCode's app script
// is found and warned about while its settings file is missing.
func TestDetectKnownLocations(t *testing.T) {
	home := t.TempDir()
	claude := script(t, filepath.Join(home, ".claude", "local", "claude"), "#!/bin/sh\necho 'v1'\n", 0o755)
	env := harness.Env{PATH: t.TempDir(), Home: home, GOOS: "linux", LookPath: func(name string) (string, error) {
		if name == "zcode" {
			return "/nowhere/zcode.cjs", nil
		}
		return "", os.ErrNotExist
	}, Run: func(ctx context.Context, program string, args ...string) ([]byte, error) {
		return []byte(program + " " + strings.Join(args, " ")), nil
	}}
	got := byID(harness.Detect(context.Background(), env))
	if d := got[harness.ClaudeCode]; d.Path != claude || d.Version != claude+" --version" {
		t.Errorf("claude: %+v", d)
	}
	if d := got[harness.ZCode]; d.Path != "/nowhere/zcode.cjs" || d.Version != "node /nowhere/zcode.cjs --version" || !strings.Contains(d.Note, "config.json") {
		t.Errorf("zcode: %+v", d)
	}
}

// Ensure Windows detection tries .exe, .cmd, .bat and no extension, in order.
func TestDetectWindowsExtensions(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	script(t, filepath.Join(a, "gemini.bat"), "@echo off\n", 0o644)
	script(t, filepath.Join(a, "gemini.cmd"), "@echo off\n", 0o644)
	script(t, filepath.Join(b, "gemini.exe"), "MZ", 0o644)
	script(t, filepath.Join(a, "codex"), "", 0o644)
	env := harness.Env{PATH: a + ";" + b, Home: t.TempDir(), GOOS: "windows", Run: func(ctx context.Context, program string, args ...string) ([]byte, error) {
		return nil, os.ErrNotExist
	}}
	got := byID(harness.Detect(context.Background(), env))
	if d := got[harness.Gemini]; d.Path != filepath.Join(a, "gemini.cmd") || d.Version != "" {
		t.Errorf("gemini: %+v", d)
	}
	if d := got[harness.Codex]; d.Path != filepath.Join(a, "codex") {
		t.Errorf("codex: %+v", d)
	}
}
