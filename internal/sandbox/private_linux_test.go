package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure Codex's folder in a place every user writes (/tmp/codex-daemon-
// {uid}, here under a test folder) is allowed only when it is a real folder
// of the user's with mode 0700: one made missing by the relay is written by
// a real sandboxed child; a symbolic link planted there (to a folder of the
// user's the run must not reach) or an open folder is not allowed.
func TestPrivateFolderOwnership(t *testing.T) {
	if ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir, victim string)
		write   bool
	}{
		{"missing", func(*testing.T, string, string) {}, true},
		{"private", func(t *testing.T, dir, _ string) { mkdir(t, dir, 0o700) }, true},
		{"link", func(t *testing.T, dir, victim string) {
			if err := os.Symlink(victim, dir); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"open", func(t *testing.T, dir, _ string) { mkdir(t, dir, 0o777) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			victim := filepath.Join(base, "home", ".ssh")
			work, run := filepath.Join(base, "work"), filepath.Join(base, "run")
			for _, d := range []string{victim, work, run} {
				mkdir(t, d, 0o700)
			}
			template := filepath.Join(base, "codex-daemon-{uid}")
			dir := strings.ReplaceAll(template, "{uid}", strconv.Itoa(os.Getuid()))
			tt.prepare(t, dir, victim)
			saved := presetPaths["codex"]
			t.Cleanup(func() { presetPaths["codex"] = saved })
			pp := saved
			pp.abs = []string{template}
			presetPaths["codex"] = pp

			req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "codex"}, Program: "/bin/sh",
				Args: []string{"-c", `echo x > "$DIR/planted" && echo wrote`}, Env: []string{"PATH=/usr/bin:/bin"},
				Workdir: work, RunDir: run}
			s, err := Wrapper{Self: self}.Wrap(req)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(s.Program, s.Args...)
			cmd.Env, cmd.Dir = []string{"PATH=/usr/bin:/bin", "DIR=" + dir}, work
			out, _ := cmd.CombinedOutput()
			if wrote := strings.Contains(string(out), "wrote"); wrote != tt.write {
				t.Fatalf("wrote %v, want %v: %s\nlog: %s", wrote, tt.write, out, s.Log)
			}
			if _, err := os.Stat(filepath.Join(victim, "planted")); err == nil {
				t.Fatal("the run wrote through the link into the user's folder")
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
