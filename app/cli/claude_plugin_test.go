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
// user's config folder (or --dir), runs the four claude commands every time
// (or prints them without claude, or with --print), so Claude Code updates
// even when an earlier run replaced the folder without running them; changes
// nothing in the folder when run again; replaces another version as a whole;
// names a failing claude command; and never touches a folder that is not its
// marketplace, nor one holding a file that is not the marketplace's.
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
	manifest := filepath.Join(def, ".claude-plugin", "marketplace.json")
	stray := filepath.Join(def, "crosschat", "stale.txt")
	// Ways the default folder can differ from this version: another version
	// (its manifest changed in place, same size), an older copy (a file
	// gone), the hook script no longer executable. A file of someone's in
	// it, or a damaged manifest, makes it a folder not to replace.
	otherVersion := func(t *testing.T) {
		b, err := os.ReadFile(manifest)
		noErr(t, err)
		noErr(t, os.WriteFile(manifest, []byte(strings.Replace(string(b), `"version": "0.`, `"version": "9.`, 1)), 0o644))
	}
	fileGone := func(t *testing.T) { noErr(t, os.Remove(filepath.Join(def, "crosschat", ".mcp.json"))) }
	notExecutable := func(t *testing.T) {
		noErr(t, os.Chmod(filepath.Join(def, "crosschat", "hooks", "session-start.sh"), 0o644))
	}
	// kept checks a refused folder still holds path with content, then
	// takes it out: the rest of the folder must be this version, untouched.
	kept := func(path, content string, restore func(t *testing.T)) func(t *testing.T) {
		return func(t *testing.T) {
			if b, err := os.ReadFile(path); err != nil || string(b) != content {
				t.Fatalf("%s was touched: %q %v", path, b, err)
			}
			restore(t)
			testkit.SameTree(t, def, src)
		}
	}
	all := []string{add + def, mktUp, install, update}
	ran := []string{"$ claude " + add + def, "$ claude " + mktUp, "$ claude " + install, "$ claude " + update, "Installed crosschat@crosschat-relay"}
	printed := []string{"Install the plugin in Claude Code with:", "  claude " + add + def, "  claude " + mktUp, "  claude " + install, "  claude " + update}
	replaced := append([]string{"Replaced the Claude Code plugin in " + def}, ran...)
	for _, tc := range []struct {
		name    string
		before  func(t *testing.T)
		claude  string // its exit code; "": none on PATH
		args    []string
		code    int
		out     []string // in the output, in order
		errs    []string // in the error output, in order
		calls   []string
		checkAt string             // the folder that must then equal the repository's
		after   func(t *testing.T) // checks, then puts the folder back
	}{
		{name: "first run without claude prints the commands", claude: "",
			out: append([]string{"Wrote the Claude Code plugin crosschat ", def, "Claude Code (claude) is not on PATH"}, printed...), checkAt: def},
		{name: "again: up to date", claude: "", out: append([]string{"is up to date in " + def}, printed...), checkAt: def},
		{name: "with claude: the four commands run, output shown", claude: "0",
			out: append([]string{"up to date", "$ claude " + add + def, "claude says hello"}, ran[1:]...), calls: all, checkAt: def},
		{name: "another version is replaced and claude updates to it", before: otherVersion, claude: "0", out: replaced, calls: all, checkAt: def},
		{name: "a copy without a file is replaced", before: fileGone, claude: "0", out: replaced, calls: all, checkAt: def},
		{name: "a hook that lost its executable bit is replaced", before: notExecutable, claude: "0", out: replaced, calls: all, checkAt: def},
		{name: "--print replaces another version and runs nothing", before: otherVersion, claude: "0", args: []string{"--print"},
			out: append([]string{"Replaced the Claude Code plugin in " + def}, printed...), checkAt: def},
		{name: "then the folder is up to date and claude still updates", claude: "0",
			out: append([]string{"is up to date in " + def}, ran...), calls: all, checkAt: def},
		{name: "a copy holding someone's file is refused untouched", claude: "0", code: 1,
			before: func(t *testing.T) { noErr(t, os.WriteFile(stray, []byte("mine"), 0o644)) },
			errs:   []string{def + " holds files that are not the crosschat-relay plugin marketplace's (crosschat/stale.txt)"},
			after:  kept(stray, "mine", func(t *testing.T) { noErr(t, os.Remove(stray)) })},
		{name: "a damaged manifest is refused untouched", claude: "0", code: 1,
			before: func(t *testing.T) { noErr(t, os.WriteFile(manifest, []byte("{"), 0o644)) },
			errs:   []string{def + " is not empty and holds no crosschat-relay plugin marketplace"},
			after: kept(manifest, "{", func(t *testing.T) {
				b, err := os.ReadFile(filepath.Join(src, ".claude-plugin", "marketplace.json"))
				noErr(t, err)
				noErr(t, os.WriteFile(manifest, b, 0o644))
			})},
		{name: "--print runs nothing", claude: "0", args: []string{"--print"}, out: append([]string{"up to date"}, printed...), checkAt: def},
		{name: "a failing claude command is named", claude: "3", code: 1, calls: []string{add + def},
			errs: []string{"claude " + add + def + ": exit status 3", "run\n  claude " + strings.Join(all, "\n  claude ") + "\n"}},
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
			inOrder(t, "output", out, tc.out)
			inOrder(t, "error output", errs, tc.errs)
			if got := calls(t, log); strings.Join(got, "\n") != strings.Join(tc.calls, "\n") {
				t.Fatalf("claude was run with %q, want %q", got, tc.calls)
			}
			if tc.checkAt != "" {
				testkit.SameTree(t, tc.checkAt, src)
			}
			if tc.after != nil {
				tc.after(t)
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

// inOrder fails t unless text holds each of wants, in that order.
func inOrder(t *testing.T, what, text string, wants []string) {
	t.Helper()
	rest := text
	for _, want := range wants {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("the %s lacks %q (in this order):\n%s", what, want, text)
		}
		rest = rest[i+len(want):]
	}
}
