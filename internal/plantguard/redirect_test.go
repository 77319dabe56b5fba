package plantguard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/plantguard"
)

// Ensure what points git at configuration or hooks elsewhere is undone
// too, not only the repository's own config and hooks folder: each case
// is a run's doing in a folder it may write, after which the user's own
// git there (status, checkout, commit) runs nothing the run wrote. Before,
// each ran the run's program outside any sandbox: git reads the
// configuration of the folder a .git's commondir names, takes a folder
// holding HEAD, objects and refs for a repository (whose core.worktree
// makes it a working tree's, fsmonitor included), reads the files an
// include names, runs the file a hook links to, and husky's hooks run the
// scripts one folder up.
func TestPlantedRedirectsUndone(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup is the user's own, before the snapshot.
		setup func(t *testing.T, dir string)
		// run is what the run does; marker is the file its program would
		// make, and elsewhere a folder the run may write outside dir (its
		// CLI's cache).
		run func(t *testing.T, dir, elsewhere, marker string)
		// user is what the user does afterwards (in dir).
		user func(t *testing.T, dir string)
	}{
		{"commondir added to .git", nil, func(t *testing.T, dir, elsewhere, marker string) {
			evil := filepath.Join(elsewhere, "evil")
			git(t, dir, "clone", "-q", "--bare", dir, evil)
			git(t, evil, "config", "core.bare", "false")
			git(t, evil, "config", "core.fsmonitor", "touch "+marker+"; false")
			write(t, filepath.Join(dir, ".git", "commondir"), evil+"\n")
		}, func(t *testing.T, dir string) { git(t, dir, "status") }},
		{"a repository folder planted in a subfolder", nil, func(t *testing.T, dir, _, marker string) {
			src := filepath.Join(dir, "src")
			git(t, dir, "clone", "-q", "--bare", dir, src)
			git(t, src, "config", "core.bare", "false")
			git(t, src, "config", "core.worktree", "..")
			git(t, src, "config", "core.fsmonitor", "touch "+marker+"; false")
		}, func(t *testing.T, dir string) { gitMay(t, filepath.Join(dir, "src"), "status") }},
		{"a subfolder made a repository through commondir", nil, func(t *testing.T, dir, elsewhere, marker string) {
			evil := filepath.Join(elsewhere, "evil")
			git(t, dir, "clone", "-q", "--bare", dir, evil)
			git(t, evil, "config", "core.bare", "false")
			git(t, evil, "config", "extensions.worktreeConfig", "true")
			git(t, evil, "config", "core.fsmonitor", "touch "+marker+"; false")
			write(t, filepath.Join(dir, "docs", "HEAD"), "ref: refs/heads/master\n")
			write(t, filepath.Join(dir, "docs", "commondir"), evil+"\n")
			write(t, filepath.Join(dir, "docs", "config.worktree"), "[core]\n\tworktree = ..\n")
		}, func(t *testing.T, dir string) { gitMay(t, filepath.Join(dir, "docs"), "status") }},
		{"a file the configuration includes", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".gitconfig"), "[alias]\n\tst = status\n")
			git(t, dir, "config", "include.path", "../.gitconfig")
		}, func(t *testing.T, dir, _, marker string) {
			write(t, filepath.Join(dir, ".gitconfig"), "[alias]\n\tst = status\n[core]\n\tfsmonitor = \"touch "+marker+"; false\"\n")
		}, func(t *testing.T, dir string) { git(t, dir, "status") }},
		{"a missing file the configuration includes if", func(t *testing.T, dir string) {
			git(t, dir, "config", "includeIf.gitdir:"+dir+"/.git.path", filepath.Join(dir, ".git-local.cfg"))
		}, func(t *testing.T, dir, _, marker string) {
			write(t, filepath.Join(dir, ".git-local.cfg"), "[core]\n\tfsmonitor = \"touch "+marker+"; false\"\n")
		}, func(t *testing.T, dir string) { git(t, dir, "status") }},
		{"the file a hook links to", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "scripts", "post-checkout"), "#!/bin/sh\nexit 0\n")
			if err := os.Chmod(filepath.Join(dir, "scripts", "post-checkout"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../scripts/post-checkout", filepath.Join(dir, ".git", "hooks", "post-checkout")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, dir, _, marker string) {
			write(t, filepath.Join(dir, "scripts", "post-checkout"), "#!/bin/sh\ntouch "+marker+"\n")
		}, func(t *testing.T, dir string) { git(t, dir, "checkout", "-q", "-b", "next") }},
		{"husky's scripts beside its hooks folder", func(t *testing.T, dir string) {
			// husky 9: core.hooksPath .husky/_, whose hooks run .husky/<hook>.
			write(t, filepath.Join(dir, ".husky", "_", "h"), `#!/bin/sh
s="$(dirname "$(dirname "$0")")/$(basename "$0")"
[ -f "$s" ] || exit 0
sh -e "$s"
`)
			write(t, filepath.Join(dir, ".husky", "_", "post-checkout"), "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n")
			write(t, filepath.Join(dir, ".husky", "post-checkout"), "true\n")
			for _, f := range []string{"h", "post-checkout"} {
				if err := os.Chmod(filepath.Join(dir, ".husky", "_", f), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			git(t, dir, "config", "core.hooksPath", ".husky/_")
		}, func(t *testing.T, dir, _, marker string) {
			write(t, filepath.Join(dir, ".husky", "post-checkout"), "touch "+marker+"\n")
		}, func(t *testing.T, dir string) { git(t, dir, "checkout", "-q", "-b", "next") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			elsewhere, marker := t.TempDir(), filepath.Join(t.TempDir(), "pwned")
			s, err := plantguard.Take(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.run(t, dir, elsewhere, marker)
			undone, _, err := s.Restore()
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			if len(undone) == 0 {
				t.Error("nothing was undone")
			}
			tc.user(t, dir)
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the run's program ran at the user's git command (undone: %v)", undone)
			}
			git(t, dir, "status") // the user's repository works
		})
	}
}

// Ensure the configuration of the hook managers that run what it names
// at the user's next commit (the pre-commit framework, lefthook) is kept
// like the agent CLIs' settings: a run's change to it is undone.
func TestHookManagerConfigUndone(t *testing.T) {
	for _, name := range []string{".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml"} {
		t.Run(name, func(t *testing.T) {
			dir := project(t)
			mine := "repos: []\n"
			write(t, filepath.Join(dir, name), mine)
			s, err := plantguard.Take(dir)
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, name), "repos:\n- repo: local\n  hooks:\n  - id: x\n    entry: sh -c 'touch /tmp/pwned'\n    language: system\n")
			undone, _, err := s.Restore()
			if err != nil || len(undone) != 1 || read(filepath.Join(dir, name)) != mine {
				t.Fatalf("undone %v, %v; %s now: %s", undone, err, name, read(filepath.Join(dir, name)))
			}
		})
	}
}

// gitMay runs git in dir as the user would, whether or not it succeeds
// (a folder the restore removed is no repository any more).
func gitMay(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
}

// Ensure the kept names are kept whatever their case: on a file system
// that ignores case (macOS's by default) a run's .CLAUDE/settings.json is
// the .claude/settings.json Claude Code reads, and its .Mcp.json the
// project's MCP servers. Before, only the lower-case names were kept.
func TestKeptNamesInAnyCase(t *testing.T) {
	dir := project(t)
	s, err := plantguard.Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", ".CLAUDE", "settings.json"), `{"hooks":{}}`)
	write(t, filepath.Join(dir, ".Mcp.json"), `{"mcpServers":{}}`)
	undone, _, err := s.Restore()
	if err != nil || len(undone) != 2 {
		t.Fatalf("undone %v, %v", undone, err)
	}
	for _, p := range []string{"sub/.CLAUDE", ".Mcp.json"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s stayed", p)
		}
	}
}
