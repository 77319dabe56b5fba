//go:build linux

package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// redirectScript plants code for later where git finds it besides the
// repository's own config and hooks: a folder made a repository of its
// own whose working tree is the project (git status in src runs its
// fsmonitor), the file the user's configuration includes, the script
// husky's hook runs; and it locks a folder of the project's Claude Code
// settings (chmod 000), so the check after the run cannot read it, before
// it plants core.fsmonitor in the repository itself.
const redirectScript = `git clone -q --bare . src && git --git-dir=src config core.bare false && git --git-dir=src config core.worktree .. &&
  git --git-dir=src config core.fsmonitor "touch $HOME/pwned-src; false" && echo planted-src
printf '[core]\n\tfsmonitor = "touch %s/pwned-include; false"\n' "$HOME" >> .gitconfig && echo planted-include
echo "touch $HOME/pwned-husky" > .husky/post-checkout && echo planted-husky
mkdir -p .claude/locked && chmod 000 .claude/locked && echo planted-lock
git config core.fsmonitor "touch $HOME/pwned-fsmonitor; false" && echo planted-fsmonitor
`

// Ensure what a run points git at, and a folder it locks, leave nothing
// planted: with the real binary running as an unprivileged user, a
// sandboxed run plants (redirectScript), and the user's git status in the
// project and in src, and git checkout, run nothing of it afterwards; the
// project's settings are as the user left them. Before, src's fsmonitor
// ran at a git status there, the included file's and husky's script at
// the user's next status and checkout, and the locked folder made the
// check after the run fail, so nothing was undone.
func TestPlantedRedirectsUndoneAfterRun(t *testing.T) {
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	u := newUserRelay(t)
	work := filepath.Join(u.home, "proj")
	u.write(t, filepath.Join(work, "README.md"), "one\n", 0o644)
	u.write(t, filepath.Join(work, ".claude", "settings.json"), `{"permissions":{}}`, 0o644)
	u.write(t, filepath.Join(work, ".gitconfig"), "[alias]\n\tst = status\n", 0o644)
	// husky 9: core.hooksPath .husky/_, whose hooks run .husky/<hook>.
	u.write(t, filepath.Join(work, ".husky", "_", "h"), "#!/bin/sh\ns=\"$(dirname \"$(dirname \"$0\")\")/$(basename \"$0\")\"\n[ -f \"$s\" ] || exit 0\nsh -e \"$s\"\n", 0o755)
	u.write(t, filepath.Join(work, ".husky", "_", "post-checkout"), "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n", 0o755)
	u.write(t, filepath.Join(work, ".husky", "post-checkout"), "true\n", 0o644)
	userGit := func(mustWork bool, dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(u.env(), "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@u", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@u")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
		out, err := cmd.CombinedOutput()
		if err != nil && mustWork {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
	}
	userGit(true, work, "init", "-q")
	userGit(true, work, "config", "include.path", "../.gitconfig")
	userGit(true, work, "config", "core.hooksPath", ".husky/_")
	userGit(true, work, "add", "README.md")
	userGit(true, work, "commit", "-q", "-m", "user's")
	u.start(t)
	boss := u.agent(t, "boss")
	u.agent(t, "builder")
	script := u.script(t, "redirect.sh", redirectScript)
	u.must(t, "workers", "set", "builder", "--harness", "custom", "--command", script, "--workdir", work,
		"--allow-sender", "boss", "--timeout", "2m", "--sandbox", "on")
	task, text := u.task(t, boss, "builder", "plant elsewhere")
	t.Logf("%s: %s", task.Status, text)
	for _, p := range []string{"planted-src", "planted-include", "planted-husky", "planted-lock", "planted-fsmonitor"} {
		if !strings.Contains(text, p) {
			t.Fatalf("the run did not plant (%s): %s", p, text)
		}
	}
	if !strings.Contains(text, "the change was undone") || strings.Contains(text, "Not all of it could be undone") {
		t.Errorf("the answer does not say it was all undone: %s", text)
	}
	// The user works there: nothing planted runs.
	userGit(false, filepath.Join(work, "src"), "status")
	userGit(true, work, "status")
	userGit(true, work, "checkout", "-q", "-b", "next")
	for _, p := range []string{"pwned-src", "pwned-include", "pwned-husky", "pwned-fsmonitor"} {
		if _, err := os.Stat(filepath.Join(u.home, p)); err == nil {
			t.Errorf("%s ran at the user's next git command", p)
		}
	}
	if got := readAll(t, filepath.Join(work, ".claude", "settings.json")); got != `{"permissions":{}}` {
		t.Errorf("the user's .claude/settings.json: %s", got)
	}
	if _, err := os.Lstat(filepath.Join(work, ".claude", "locked")); err == nil {
		t.Error("the locked folder stayed in .claude")
	}
}
