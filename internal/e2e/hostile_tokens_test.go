//go:build linux

package e2e_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	cclient "github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// searchScript is a CLI that reads every file its run may open: each
// file of its user's on the computer (paths.txt in its working folder,
// listed by the test from outside the sandbox, as a run cannot list the
// folders above its own), everything below its own folders and CLI home
// (made for the run, so not listed beforehand) with the links there
// followed, and every process's environment and command line it can
// read; it writes the agent tokens (cca_ and 43 characters) it finds, with
// where, to found.txt in its working folder.
const searchScript = `out="$PWD/found.txt"; : > "$out"
scan() { grep -a -o -E 'cca_[A-Za-z0-9_-]{43}' "$1" 2>/dev/null | sed "s|^|$1: |" >> "$out"; }
while IFS= read -r f; do scan "$f"; done < paths.txt
home="${CLAUDE_CONFIG_DIR:-${CODEX_HOME:-$GEMINI_CLI_HOME}}"
find -L "$home" "$PWD" "$TMPDIR" "$(dirname "$CROSSCHAT_TASK_FILE")" -type f 2>/dev/null | while IFS= read -r f; do
  [ "$f" = "$out" ] || scan "$f"
done
for p in /proc/[0-9]*; do
  for f in environ cmdline; do
    tr '\0' '\n' < "$p/$f" 2>/dev/null | grep -a -o -E 'cca_[A-Za-z0-9_-]{43}' | sed "s|^|$p/$f: |" >> "$out"
  done
done
echo "searched $(wc -l < paths.txt) listed files, $home" >> "$out"
`

// userFiles lists every regular file of the run's user on this computer:
// under base, and, when the tests run as root (the user is nobody),
// anywhere else but /proc, /sys and /dev.
func userFiles(t *testing.T, u *userRelay) string {
	t.Helper()
	var out []string
	roots := []string{u.base}
	if u.cred != nil {
		roots = []string{"/"}
	}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && (p == "/proc" || p == "/sys" || p == "/dev") {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && (u.cred == nil || st.Uid == u.cred.Uid) {
				out = append(out, p)
			}
			return nil
		})
	}
	return strings.Join(out, "\n") + "\n"
}

// Ensure no agent token reaches a run: the one-step Connect writes each
// agent's cca_ token into the user's own settings of its CLI
// (~/.claude.json, ~/.codex/config.toml, ~/.gemini/settings.json), where
// the user's chats keep using it; then each agent's sandboxed worker run
// (the real binary as an unprivileged user; the preset's CLI replaced by a
// program that searches everything the run can read) finds none of the
// agents' tokens. Before, Claude Code's copy of ~/.claude.json and the
// link to ~/.codex/config.toml (and ~/.gemini/settings.json) gave each run
// its agent's token, with which read_updates and a post_task with no
// parent worked, outliving the run.
func TestNoAgentTokenInARun(t *testing.T) {
	if sandbox.ABI() < 1 {
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
	}
	u := newUserRelay(t)
	work := filepath.Join(u.home, "projects", "app")
	u.write(t, filepath.Join(work, "README.md"), "app\n", 0o644)
	// A token-shaped canary the run may read: the search finds what it can.
	canary := "cca_" + strings.Repeat("C", 43)
	u.write(t, filepath.Join(work, "canary.md"), canary+"\n", 0o644)
	program := u.script(t, "cli.sh", searchScript)
	u.start(t)
	boss := u.agent(t, "boss")
	tok, err := os.ReadFile(filepath.Join(u.data, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	bridge := cclient.New("http://127.0.0.1:"+strconv.Itoa(u.port), strings.TrimSpace(string(tok)))
	settings := map[string]string{
		"claude-code": filepath.Join(u.home, ".claude.json"),
		"codex":       filepath.Join(u.home, ".codex", "config.toml"),
		"gemini":      filepath.Join(u.home, ".gemini", "settings.json"),
	}
	tokens := map[string]string{}
	for _, preset := range []string{"claude-code", "codex", "gemini"} {
		slug := "agent-" + strings.Split(preset, "-")[0]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var res app.ConnectResult
		err := bridge.Call(ctx, "Workers", "Connect", &res, app.ConnectInput{Harness: preset, Slug: slug, DisplayName: slug, ConfigureClient: true,
			Worker: &relay.WorkerConfig{Command: program, Workdir: work, AllowedSenders: []string{"boss"}, Enabled: true, TimeoutMinutes: 5,
				Sandbox: relay.SandboxOn}})
		cancel()
		if err != nil || !res.Connection.Configured {
			t.Fatalf("connect %s: %+v, %v", preset, res, err)
		}
		// The token Connect wrote for the user's own chats, which keep it.
		body := readAll(t, settings[preset])
		i := strings.Index(body, "cca_")
		if i < 0 || len(body) < i+47 {
			t.Fatalf("%s holds no agent token after Connect:\n%s", settings[preset], body)
		}
		tokens[preset] = body[i : i+47]
	}
	for _, preset := range []string{"claude-code", "codex", "gemini"} {
		slug := "agent-" + strings.Split(preset, "-")[0]
		_ = os.Remove(filepath.Join(work, "found.txt"))
		u.write(t, filepath.Join(work, "paths.txt"), userFiles(t, u), 0o644)
		task, text := u.task(t, boss, slug, "search "+preset)
		found := readAll(t, filepath.Join(work, "found.txt"))
		t.Logf("%s: %s (%q); found:\n%s", preset, task.Status, firstLine(text), found)
		if !strings.Contains(found, "searched") || !strings.Contains(found, "cli-homes") || !strings.Contains(found, canary) {
			t.Fatalf("%s: the search did not run: %s: %s", preset, task.Status, text)
		}
		for p, tk := range tokens {
			if strings.Contains(found, tk) {
				t.Errorf("a %s run can read the %s agent's token: %s", preset, p, lines(found, tk))
			}
		}
	}
	for preset, file := range settings {
		if !strings.Contains(readAll(t, file), tokens[preset]) {
			t.Errorf("the user's own %s lost its token (the one-step Connect must keep working in the user's chats)", file)
		}
	}
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// lines are the lines of s that hold sub.
func lines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
