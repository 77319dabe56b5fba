package cli_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// fakeClaude puts a claude program on PATH (alone with sh's folder) that
// appends its arguments to the returned log and exits with code; with code
// "" no claude is on PATH at all.
func fakeClaude(t *testing.T, code string) string {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(bin, "calls.log")
	if code != "" {
		script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\necho claude says hello\nexit " + code + "\n"
		noErr(t, os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755))
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/bin"+string(os.PathListSeparator)+"/usr/bin")
	return log
}

// calls is what the fake claude was run with, one line per run.
func calls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	noErr(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Ensure claude-plugin writes exactly the repository's marketplace into the
// user's config folder (or --dir), runs the two claude commands (or prints
// them without claude, or with --print), changes nothing when run again,
// replaces another version as a whole and asks claude to update to it,
// names a failing claude command, and never touches a folder that is not
// its marketplace.
func TestClaudePluginCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in claude is a shell script")
	}
	// The repository's marketplace: what main embeds.
	src, err := filepath.Abs(filepath.Join("..", "..", "build", "claude-plugin"))
	noErr(t, err)
	saved := cli.ClaudePlugin
	cli.ClaudePlugin = os.DirFS(src)
	t.Cleanup(func() { cli.ClaudePlugin = saved })
	store := projectHome(t)
	def := filepath.Join(filepath.Dir(store), "claude-plugin")
	const (
		add     = "plugin marketplace add "
		install = "plugin install crosschat@crosschat-relay"
		mktUp   = "plugin marketplace update crosschat-relay"
		update  = "plugin update crosschat@crosschat-relay"
	)
	// Ways the default folder can differ from this version: another version
	// (its manifest changed in place, same size), an older copy (a file
	// gone, or one too many), the hook script no longer executable.
	otherVersion := func(t *testing.T) {
		m := filepath.Join(def, ".claude-plugin", "marketplace.json")
		b, err := os.ReadFile(m)
		noErr(t, err)
		noErr(t, os.WriteFile(m, []byte(strings.Replace(string(b), `"version": "0.`, `"version": "9.`, 1)), 0o644))
	}
	fileGone := func(t *testing.T) { noErr(t, os.Remove(filepath.Join(def, "crosschat", ".mcp.json"))) }
	fileTooMany := func(t *testing.T) {
		noErr(t, os.WriteFile(filepath.Join(def, "crosschat", "stale.txt"), []byte("from an older release"), 0o644))
	}
	notExecutable := func(t *testing.T) {
		noErr(t, os.Chmod(filepath.Join(def, "crosschat", "hooks", "session-start.sh"), 0o644))
	}
	replaced := []string{"Replaced the Claude Code plugin in " + def, "$ claude " + mktUp, "$ claude " + update}
	replacedCalls := []string{add + def, mktUp, install, update}
	for _, tc := range []struct {
		name    string
		before  func(t *testing.T)
		claude  string // its exit code; "": none on PATH
		args    []string
		code    int
		out     []string // in the output, in order
		calls   []string
		checkAt string // the folder that must then equal the repository's
	}{
		{name: "first run without claude prints the commands", claude: "", code: 0,
			out: []string{"Wrote the Claude Code plugin crosschat ", def, "Claude Code (claude) is not on PATH", "  claude " + add + def, "  claude " + install}, checkAt: def},
		{name: "again: up to date", claude: "", code: 0,
			out: []string{"is up to date in " + def, "  claude " + install}, checkAt: def},
		{name: "with claude: the two commands run, output shown", claude: "0", code: 0,
			out:   []string{"up to date", "$ claude " + add + def, "claude says hello", "$ claude " + install, "Installed crosschat@crosschat-relay"},
			calls: []string{add + def, install}, checkAt: def},
		{name: "another version is replaced and claude updates to it", before: otherVersion, claude: "0", out: replaced, calls: replacedCalls, checkAt: def},
		{name: "a copy without a file is replaced", before: fileGone, claude: "0", out: replaced, calls: replacedCalls, checkAt: def},
		{name: "a copy with a stray file is replaced", before: fileTooMany, claude: "0", out: replaced, calls: replacedCalls, checkAt: def},
		{name: "a hook that lost its executable bit is replaced", before: notExecutable, claude: "0", out: replaced, calls: replacedCalls, checkAt: def},
		{name: "--print runs nothing", claude: "0", args: []string{"--print"}, code: 0,
			out: []string{"up to date", "Install the plugin in Claude Code with:", "  claude " + add + def}, checkAt: def},
		{name: "a failing claude command is named", claude: "3", code: 1, calls: []string{add + def}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before(t)
			}
			log := fakeClaude(t, tc.claude)
			out, errs, code := run(t, append([]string{"claude-plugin"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errs)
			}
			rest := out
			for _, want := range tc.out {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("the output lacks %q (in this order):\n%s", want, out)
				}
				rest = rest[i+len(want):]
			}
			if got := calls(t, log); strings.Join(got, "\n") != strings.Join(tc.calls, "\n") {
				t.Fatalf("claude was run with %q, want %q", got, tc.calls)
			}
			if tc.code == 1 && (!strings.Contains(errs, "claude "+add+def+": exit status 3") || !strings.HasSuffix(errs, "run\n  claude "+add+def+"\n  claude "+install+"\n")) {
				t.Fatalf("the error does not name the command: %s", errs)
			}
			if tc.checkAt != "" {
				testkit.SameTree(t, tc.checkAt, src)
			}
		})
	}
	entries, err := os.ReadDir(filepath.Dir(def))
	noErr(t, err)
	for _, e := range entries {
		if e.Name() != "claude-plugin" {
			t.Errorf("left beside the plugin folder: %s", e.Name())
		}
	}

	// --dir: a new folder is written; one that is not the marketplace is refused.
	fakeClaude(t, "")
	mine := filepath.Join(t.TempDir(), "my plugins")
	if out, errs, code := run(t, "claude-plugin", "--dir", mine); code != 0 || !strings.Contains(out, "claude plugin marketplace add '"+mine+"'") {
		t.Fatalf("--dir %s: exit %d\n%s\n%s", mine, code, out, errs)
	}
	testkit.SameTree(t, mine, src)
	notes := t.TempDir()
	noErr(t, os.WriteFile(filepath.Join(notes, "notes.txt"), []byte("mine"), 0o644))
	if out, errs, code := run(t, "claude-plugin", "--dir", notes); code != 1 || !strings.Contains(errs, "holds no crosschat-relay plugin marketplace") {
		t.Fatalf("--dir on a folder of notes: exit %d\n%s\n%s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(notes, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatalf("the folder of notes was touched: %q %v", b, err)
	}
	if _, errs, code := run(t, "claude-plugin", "extra"); code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Fatalf("an argument: exit %d %s", code, errs)
	}
}
