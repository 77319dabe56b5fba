package plantguard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/plantguard"
)

// git runs git in dir and fails the test when it fails.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// project is a working folder with a repository (one commit) and the user's
// own Claude Code settings.
func project(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, filepath.Join(dir, "README.md"), "hello\n")
	write(t, filepath.Join(dir, ".claude", "settings.json"), `{"permissions":{}}`)
	write(t, filepath.Join(dir, ".husky", "pre-commit"), "npx lint-staged\n")
	git(t, dir, "config", "core.hooksPath", ".husky")
	git(t, dir, "add", "README.md")
	git(t, dir, "commit", "-q", "-m", "one")
	return dir
}

// Ensure each way a run plants code for later in a folder it may write is
// undone after the run, and reported; the run's own work (files, commits)
// stays. Each case is a run's doing, in a real repository.
func TestPlantedCodeUndone(t *testing.T) {
	payload := "#!/bin/sh\ntouch /tmp/pwned\n"
	for _, tc := range []struct {
		name string
		// run does what the run does in dir.
		run func(t *testing.T, dir string)
		// check checks the folder after Restore.
		check func(t *testing.T, dir string)
		// undone names a path Restore must report ("" for none).
		undone string
	}{
		{"fsmonitor in .git/config", func(t *testing.T, dir string) {
			git(t, dir, "config", "core.fsmonitor", "touch /tmp/pwned")
		}, func(t *testing.T, dir string) {
			if strings.Contains(read(filepath.Join(dir, ".git", "config")), "fsmonitor") {
				t.Error("core.fsmonitor stayed")
			}
		}, ".git/config"},
		{"a new hook", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".git", "hooks", "post-checkout"), payload)
		}, func(t *testing.T, dir string) {
			if _, err := os.Lstat(filepath.Join(dir, ".git", "hooks", "post-checkout")); err == nil {
				t.Error("the hook stayed")
			}
			if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit.sample")); err != nil {
				t.Errorf("git's sample hooks went: %v", err)
			}
		}, ".git/hooks"},
		{"hooks in .claude/settings.json", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".claude", "settings.json"), `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}`)
		}, func(t *testing.T, dir string) {
			if got := read(filepath.Join(dir, ".claude", "settings.json")); got != `{"permissions":{}}` {
				t.Errorf("settings.json: %s", got)
			}
		}, ".claude"},
		{".mcp.json and .codex added", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"x":{"command":"sh"}}}`)
			write(t, filepath.Join(dir, "sub", ".codex", "config.toml"), "notify = [\"sh\"]\n")
		}, func(t *testing.T, dir string) {
			for _, p := range []string{".mcp.json", "sub/.codex"} {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s stayed", p)
				}
			}
		}, ".mcp.json"},
		{".git renamed and replaced", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, ".git-old")); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "init", "-q")
			git(t, dir, "config", "core.fsmonitor", "touch /tmp/pwned")
		}, func(t *testing.T, dir string) {
			if _, err := os.Lstat(filepath.Join(dir, ".git-old")); err == nil {
				t.Error("the original stayed aside")
			}
			if log := git(t, dir, "log", "--format=%s"); !strings.Contains(log, "one") || strings.Contains(read(filepath.Join(dir, ".git", "config")), "fsmonitor") {
				t.Errorf("the original repository is not back: %s", log)
			}
		}, ".git"},
		{".git replaced by a pointer", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, ".git"), "gitdir: /tmp/evil.git\n")
		}, func(t *testing.T, dir string) {
			if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
				t.Error("the pointer stayed")
			}
		}, ".git"},
		{"a new repository with a hook and fsmonitor", func(t *testing.T, dir string) {
			sub := filepath.Join(dir, "vendor", "lib")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, sub, "init", "-q")
			git(t, sub, "config", "core.fsmonitor", "touch /tmp/pwned")
			git(t, sub, "config", "include.path", "/tmp/evil")
			write(t, filepath.Join(sub, ".git", "hooks", "pre-commit"), payload)
		}, func(t *testing.T, dir string) {
			sub := filepath.Join(dir, "vendor", "lib")
			cfg := read(filepath.Join(sub, ".git", "config"))
			if strings.Contains(cfg, "fsmonitor") || strings.Contains(cfg, "include") || !strings.Contains(cfg, "repositoryformatversion") {
				t.Errorf("config of the new repository:\n%s", cfg)
			}
			if _, err := os.Lstat(filepath.Join(sub, ".git", "hooks", "pre-commit")); err == nil {
				t.Error("its hook stayed")
			}
			git(t, sub, "status") // still a repository
		}, "vendor/lib/.git"},
		{"settings locked and replaced by a link", func(t *testing.T, dir string) {
			elsewhere := filepath.Join(dir, "elsewhere")
			write(t, filepath.Join(elsewhere, "settings.json"), "theirs")
			if err := os.Rename(filepath.Join(dir, ".claude"), filepath.Join(dir, "old-claude")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "old-claude"), 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(dir, ".claude")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, dir string) {
			if fi, err := os.Lstat(filepath.Join(dir, ".claude")); err != nil || !fi.IsDir() || read(filepath.Join(dir, ".claude", "settings.json")) != `{"permissions":{}}` {
				t.Errorf(".claude: %v, %v", fi, err)
			}
			if read(filepath.Join(dir, "elsewhere", "settings.json")) != "theirs" {
				t.Error("the link's target was changed")
			}
			_ = os.Chmod(filepath.Join(dir, "old-claude"), 0o700)
		}, ".claude"},
		{"a hook in the worktree's hooks folder (core.hooksPath)", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".husky", "pre-commit"), payload)
		}, func(t *testing.T, dir string) {
			if got := read(filepath.Join(dir, ".husky", "pre-commit")); got != "npx lint-staged\n" {
				t.Errorf(".husky/pre-commit: %q", got)
			}
		}, ".husky"},
		{"OpenCode's and Cursor's project settings", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "opencode.json"), `{"mcp":{"x":{"type":"local","command":["sh"]}}}`)
			write(t, filepath.Join(dir, ".cursor", "mcp.json"), `{"mcpServers":{"x":{"command":"sh"}}}`)
		}, func(t *testing.T, dir string) {
			for _, p := range []string{"opencode.json", ".cursor"} {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s stayed", p)
				}
			}
		}, "opencode.json"},
		{"fsmonitor and a hook in a submodule's repository", func(t *testing.T, dir string) {
			lib := filepath.Join(filepath.Dir(dir), "lib-"+filepath.Base(dir))
			if err := os.MkdirAll(lib, 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, lib, "init", "-q")
			write(t, filepath.Join(lib, "a.txt"), "a\n")
			git(t, lib, "add", "a.txt")
			git(t, lib, "commit", "-q", "-m", "lib")
			// Made before the snapshot in the real flow; here the run adds
			// the submodule (git writes its repository under .git/modules)
			// and then plants in it.
			git(t, dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "libs/lib")
			mod := filepath.Join(dir, ".git", "modules", "libs", "lib")
			git(t, filepath.Join(dir, "libs", "lib"), "config", "core.fsmonitor", "touch /tmp/pwned")
			write(t, filepath.Join(mod, "hooks", "post-checkout"), payload)
		}, func(t *testing.T, dir string) {
			mod := filepath.Join(dir, ".git", "modules", "libs", "lib")
			if cfg := read(filepath.Join(mod, "config")); strings.Contains(cfg, "touch") || !strings.Contains(cfg, "repositoryformatversion") {
				t.Errorf("the submodule's configuration:\n%s", cfg)
			}
			if _, err := os.Lstat(filepath.Join(mod, "hooks", "post-checkout")); err == nil {
				t.Error("the submodule's hook stayed")
			}
		}, ".git/modules/libs/lib/config"},
		{"only the run's own work", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "README.md"), "changed\n")
			git(t, dir, "commit", "-q", "-am", "two")
			git(t, dir, "checkout", "-q", "-b", "feature")
		}, func(t *testing.T, dir string) {
			if log := git(t, dir, "log", "--format=%s"); !strings.Contains(log, "two") || read(filepath.Join(dir, "README.md")) != "changed\n" {
				t.Errorf("the run's work was undone: %s", log)
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t)
			s, err := plantguard.Take(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.run(t, dir)
			undone, partial, err := s.Restore()
			if err != nil || partial {
				t.Fatalf("restore: %v (partial %v)", err, partial)
			}
			tc.check(t, dir)
			var got []string
			for _, c := range undone {
				got = append(got, c.String())
			}
			found := false
			for _, c := range undone {
				if tc.undone != "" && c.Path == filepath.Join(dir, tc.undone) {
					found = true
				}
			}
			if (tc.undone == "") != (len(undone) == 0) || tc.undone != "" && !found {
				t.Errorf("undone %v, want %q", got, tc.undone)
			}
			if tc.name != ".git replaced by a pointer" { // that run deleted the repository itself
				git(t, dir, "status") // the user's repository works
			}
		})
	}
}

// Ensure a repository's configuration keeps only what git writes of
// itself: every key that names a program, an include, a hook folder or a
// remote goes, as do lines it cannot read plainly.
func TestSafeGitConfig(t *testing.T) {
	in := `[core]
	repositoryformatversion = 0
	filemode = true
	fsmonitor = touch /tmp/pwned
	hooksPath = /tmp/hooks
	bare = false
	sshCommand = "sh -c evil"
[include]
	path = /tmp/evil
[remote "origin"]
	url = ext::sh -c evil
[extensions]
	objectFormat = sha256
[alias]
	st = !sh -c evil
`
	got := string(plantguard.SafeGitConfig([]byte(in)))
	want := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// Ensure a submodule the user had is kept like the repository: a run's
// core.fsmonitor in its repository (under .git/modules, which the user's
// git status in the project reads) is put back as it was.
func TestPlantedInSubmoduleUndone(t *testing.T) {
	dir := project(t)
	lib := t.TempDir()
	git(t, lib, "init", "-q")
	write(t, filepath.Join(lib, "a.txt"), "a\n")
	git(t, lib, "add", "a.txt")
	git(t, lib, "commit", "-q", "-m", "lib")
	git(t, dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "libs/lib")
	cfg := filepath.Join(dir, ".git", "modules", "libs", "lib", "config")
	before := read(cfg)
	s, err := plantguard.Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	git(t, filepath.Join(dir, "libs", "lib"), "config", "core.fsmonitor", "touch /tmp/pwned")
	undone, _, err := s.Restore()
	if err != nil || len(undone) != 1 || read(cfg) != before {
		t.Fatalf("undone %v, %v; config now:\n%s", undone, err, read(cfg))
	}
}
