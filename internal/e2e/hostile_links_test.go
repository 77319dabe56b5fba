//go:build linux

package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure a worker's folders and allowed paths are pinned when it is saved:
// with the real binary running as an unprivileged user, a sandboxed run
// swaps folders other workers use (inside its own working folder) for
// symbolic links, and each victim's next run is refused with a blocker
// naming the path, instead of getting rules where the link leads:
//
//   - a working folder swapped for a link to ~/.ssh (the victim would read
//     id_ed25519 and write authorized_keys);
//   - an extra folder swapped for a link to the data folder's cli-homes
//     (another worker's CLI home);
//   - an allowed path (--allow-path ~/c/cache:rw) its own worker's first
//     run swaps for a link to the home folder (the second run would read
//     the admin token in the data folder, with only a warning in its log);
//   - a working folder saved inside the data folder by an older version
//     (only the save checked it), refused at the run.
//
// Before, every victim got read-write rules where its link led.
func TestLinkSwapsRefused(t *testing.T) {
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	u := newUserRelay(t)
	h := u.home
	key, keys := filepath.Join(h, ".ssh", "id_ed25519"), filepath.Join(h, ".ssh", "authorized_keys")
	otherHome := filepath.Join(u.data, "cli-homes", "planter", "claude-code", "secret.txt")
	for p, body := range map[string]string{
		key: "PRIVATE-KEY-77aa\n", keys: "ssh-ed25519 AAAA mine\n",
		filepath.Join(h, "proj", "README.md"):     "a\n",
		filepath.Join(h, "proj", "sub", "x.md"):   "b\n",
		filepath.Join(h, "proj", "homes", "x.md"): "c\n",
		filepath.Join(h, "c", "cache", "x.md"):    "d\n",
		filepath.Join(h, "d", "README.md"):        "e\n",
	} {
		u.write(t, p, body, 0o600)
	}
	u.start(t)
	boss := u.agent(t, "boss")
	for _, slug := range []string{"planter", "victim-b", "victim-c", "victim-d"} {
		u.agent(t, slug)
	}
	set := func(slug, script string, args ...string) {
		t.Helper()
		u.must(t, append([]string{"workers", "set", slug, "--harness", "custom", "--command", script, "--allow-sender", "boss",
			"--timeout", "2m", "--sandbox", "on"}, args...)...)
	}
	read := u.script(t, "read.sh", `if cat id_ed25519 2>/dev/null; then echo read-key; fi
if [ -e authorized_keys ] && echo "ssh-ed25519 EVIL" >> authorized_keys 2>/dev/null; then echo wrote-keys; fi
if cat "$HOME/proj/homes/planter/claude-code/secret.txt" 2>/dev/null; then echo read-other-home; fi
if cat "`+filepath.Join(u.data, "api-token")+`" 2>/dev/null; then echo read-token; fi
echo done
`)
	// The planter's working folder holds the victims' folders.
	set("planter", u.script(t, "plant.sh", `mv sub sub.real && ln -s "$HOME/.ssh" sub && echo planted-sub
mv homes homes.real && ln -s "`+filepath.Join(u.data, "cli-homes")+`" homes && echo planted-homes
`), "--workdir", filepath.Join(h, "proj"))
	// Another worker's CLI home, written once its worker exists: the
	// relay prunes, as it starts, the homes of agents without a worker,
	// and /health answers before that (written earlier, it was pruned now
	// and then, and the test failed for want of it).
	u.write(t, otherHome, "OTHER-HOME-SECRET\n", 0o600)
	set("victim-b", read, "--workdir", filepath.Join(h, "proj", "sub"))
	set("victim-d", read, "--workdir", filepath.Join(h, "d"), "--extra-dir", filepath.Join(h, "proj", "homes"))
	set("victim-c", u.script(t, "cache.sh", `if [ -L cache ]; then
  if cat "`+filepath.Join(u.data, "api-token")+`" 2>/dev/null; then echo read-token; fi
else rm -rf cache && ln -s "$HOME" cache && echo planted-cache; fi
`), "--workdir", filepath.Join(h, "c"), "--allow-path", filepath.Join(h, "c", "cache")+":rw")

	if _, text := u.task(t, boss, "planter", "plant"); !strings.Contains(text, "planted-sub") || !strings.Contains(text, "planted-homes") {
		t.Fatalf("the planter's run: %s", text)
	}
	if _, text := u.task(t, boss, "victim-c", "plant the cache"); !strings.Contains(text, "planted-cache") {
		t.Fatalf("victim-c's first run: %s", text)
	}
	for _, tc := range []struct{ slug, path string }{
		{"victim-b", filepath.Join(h, "proj", "sub")},
		{"victim-d", filepath.Join(h, "proj", "homes")},
		{"victim-c", filepath.Join(h, "c", "cache")},
	} {
		task, text := u.task(t, boss, tc.slug, "after the swap")
		t.Logf("%s: %s: %s", tc.slug, task.Status, text)
		for _, leak := range []string{"PRIVATE-KEY", "read-key", "wrote-keys", "OTHER-HOME-SECRET", "read-other-home", "read-token"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s: the run got through a swapped link (%s): %s", tc.slug, leak, text)
			}
		}
		if task.Status != relay.StatusBlocked || !strings.Contains(text, tc.path) {
			t.Errorf("%s: %s, want blocked naming %s: %s", tc.slug, task.Status, tc.path, text)
		}
	}
	if got := readAll(t, keys); got != "ssh-ed25519 AAAA mine\n" {
		t.Errorf("authorized_keys was changed: %q", got)
	}

	// A working folder inside the data folder, saved by an older version
	// (the save refuses it now): refused at the run, every run.
	inside := filepath.Join(u.data, "cli-homes", "planter")
	if _, errs, code := u.run(t, "", "workers", "set", "victim-b", "--harness", "custom", "--command", read, "--allow-sender", "boss",
		"--workdir", inside, "--sandbox", "on"); code == 0 || !strings.Contains(errs, "data folder") {
		t.Errorf("saving a working folder in the data folder: %d %s", code, errs)
	}
	u.stop(t)
	setWorkdir(t, u, "victim-b", inside)
	u.start(t)
	task, text := u.task(t, boss, "victim-b", "inside the data folder")
	if task.Status != relay.StatusBlocked || !strings.Contains(text, "data folder") || strings.Contains(text, "OTHER-HOME-SECRET") {
		t.Errorf("a working folder in the data folder: %s: %s", task.Status, text)
	}
}
