package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/project"
)

// ClaudePlugin is the Claude Code plugin marketplace of build/claude-plugin,
// rooted at that folder. main embeds the folder in the binary and sets this
// before it calls Command, so `claude-plugin` needs no checkout.
var ClaudePlugin fs.FS

// claudePluginAbout explains claude-plugin in its help.
const claudePluginAbout = `Installs the Claude Code plugin of Crosschat Relay (a session-start hook that
makes each project folder an address, the crosschat MCP server with channel
events, and a skill) from this binary: no checkout of the repository needed.

It writes the plugin's marketplace to DIR (default: crosschat-relay/claude-plugin
in your config folder). A copy of another version there is replaced as a whole:
the new one is written beside it, then renamed into place. A folder holding
anything else (another marketplace, or any file that is not one of this
marketplace's) is refused untouched. Then, if claude is on PATH, it runs
  claude plugin marketplace add DIR
  claude plugin marketplace update crosschat-relay
  claude plugin install crosschat@crosschat-relay
  claude plugin update crosschat@crosschat-relay
so Claude Code has this version even when an earlier run replaced the folder
but did not get to update it. Without claude on PATH, or with --print, it
prints the four commands instead. Running it again changes nothing. Claude
Code reads the plugin from DIR: keep the folder.`

// pluginMarketplace is what claude-plugin reads of a marketplace's manifest.
type pluginMarketplace struct {
	Name    string `json:"name"`
	Plugins []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"plugins"`
}

const (
	// marketplaceFile is the manifest of a Claude Code plugin marketplace.
	marketplaceFile = ".claude-plugin/marketplace.json"
	// maxMarketplaceFile bounds the manifest read from an existing folder.
	maxMarketplaceFile = 64 << 10
	// claudeCommandTimeout bounds each claude command the verb runs.
	claudeCommandTimeout = 2 * time.Minute
)

// pluginState says what writePlugin found in the folder.
type pluginState int

const (
	pluginCurrent  pluginState = iota // it held exactly the embedded files: nothing written
	pluginCreated                     // it was missing or empty: written
	pluginReplaced                    // it held another version: replaced
)

// claudePluginCmd runs `crosschat-relay claude-plugin`.
func claudePluginCmd(args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("claude-plugin", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	var dir string
	var printOnly bool
	fset.StringVar(&dir, "dir", "", "the folder for the plugin's marketplace (default: crosschat-relay/claude-plugin in your config folder)")
	fset.BoolVar(&printOnly, "print", false, "write the folder, then print the claude commands instead of running them")
	if _, err := parseArgs(fset, args); err != nil {
		return err
	}
	if ClaudePlugin == nil {
		return fmt.Errorf("this build has no Claude Code plugin embedded")
	}
	files, mkt, err := embeddedPlugin(ClaudePlugin)
	if err != nil {
		return err
	}
	if dir == "" {
		base, err := project.DefaultDir()
		if err != nil {
			return err
		}
		dir = filepath.Join(base, "claude-plugin")
	}
	// Claude Code keeps the folder's path: it must not depend on where this ran.
	if dir, err = filepath.Abs(dir); err != nil {
		return fmt.Errorf("the plugin folder: %w", err)
	}
	state, err := writePlugin(dir, files, mkt.Name, stderr)
	if err != nil {
		return err
	}
	plugin := fmt.Sprintf("%s %s", mkt.Plugins[0].Name, mkt.Plugins[0].Version)
	switch state {
	case pluginCurrent:
		fmt.Fprintf(stdout, "The Claude Code plugin %s is up to date in %s.\n", plugin, dir)
	case pluginCreated:
		fmt.Fprintf(stdout, "Wrote the Claude Code plugin %s to %s.\n", plugin, dir)
	case pluginReplaced:
		fmt.Fprintf(stdout, "Replaced the Claude Code plugin in %s with %s.\n", dir, plugin)
	}
	if _, err := exec.LookPath("crosschat-relay"); err != nil {
		fmt.Fprintln(stdout, "Note: crosschat-relay is not on PATH; the plugin's hook and MCP server run it by that name, so put it there.")
	}

	// All four always: each is idempotent, and only the update commands
	// move Claude Code off a version it installed from an older copy, which
	// an earlier run (with --print, or stopped by an error) may have left.
	id := mkt.Plugins[0].Name + "@" + mkt.Name
	steps := [][]string{
		{"plugin", "marketplace", "add", dir},
		{"plugin", "marketplace", "update", mkt.Name},
		{"plugin", "install", id},
		{"plugin", "update", id},
	}
	claude, err := exec.LookPath("claude")
	if printOnly || err != nil {
		if !printOnly {
			fmt.Fprintln(stdout, "Claude Code (claude) is not on PATH.")
		}
		fmt.Fprintln(stdout, "Install the plugin in Claude Code with:")
		for _, s := range steps {
			fmt.Fprintln(stdout, "  "+commandLine(append([]string{"claude"}, s...)))
		}
		return nil
	}
	for i, s := range steps {
		line := commandLine(append([]string{"claude"}, s...))
		fmt.Fprintln(stdout, "$ "+line)
		if err := runClaude(claude, s, stdout, stderr); err != nil {
			var rest strings.Builder
			for _, r := range steps[i:] {
				rest.WriteString("\n  " + commandLine(append([]string{"claude"}, r...)))
			}
			return fmt.Errorf("%s: %w (its output is above). The plugin's folder is ready: once the cause is fixed, run%s", line, err, rest.String())
		}
	}
	fmt.Fprintf(stdout, "Installed %s in Claude Code: new sessions load it.\n", id)
	return nil
}

// runClaude runs the claude program with args, its output shown as it comes.
func runClaude(claude string, args []string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), claudeCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer in %s", claudeCommandTimeout)
		}
		return err
	}
	return nil
}

// embeddedPlugin reads every file of the marketplace fsys (by slash path)
// and its manifest, which must name the marketplace and one plugin.
func embeddedPlugin(fsys fs.FS) (map[string][]byte, pluginMarketplace, error) {
	var mkt pluginMarketplace
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, name)
		files[name] = b
		return err
	})
	if err != nil {
		return nil, mkt, fmt.Errorf("the embedded Claude Code plugin: %w", err)
	}
	if err := json.Unmarshal(files[marketplaceFile], &mkt); err != nil || mkt.Name == "" || len(mkt.Plugins) != 1 || mkt.Plugins[0].Name == "" {
		return nil, mkt, fmt.Errorf("the embedded Claude Code plugin: %s names no marketplace and plugin (%v)", marketplaceFile, err)
	}
	return files, mkt, nil
}

// pluginFileMode is the mode a marketplace file is written with: the
// hook scripts executable, as in the repository.
func pluginFileMode(name string) fs.FileMode {
	if strings.HasSuffix(name, ".sh") {
		return 0o755
	}
	return 0o644
}

// removeAll deletes the old copy of a replaced folder; a test makes it fail.
var removeAll = os.RemoveAll

// maxForeignFiles bounds the files outside the marketplace that are looked
// for, and named, in a folder claude-plugin refuses.
const maxForeignFiles = 3

// writePlugin makes dir hold exactly files. A dir that holds them already is
// left alone; a missing or empty one is written. One whose manifest names the
// marketplace mkt and that holds no file but files (another version, or a
// copy with a file missing, edited or not executable) is replaced as a whole:
// the new copy is written beside it, then renamed into place. Any other
// folder (its manifest missing, unreadable or naming another marketplace, or
// a file in it that is not one of files) is refused untouched, so neither a
// mistyped --dir nor a file someone put in the folder is ever deleted. An old
// copy that cannot be deleted once replaced (on Windows, a file of it in use)
// is left beside dir with a warning on warn.
func writePlugin(dir string, files map[string][]byte, mkt string, warn io.Writer) (pluginState, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return 0, fmt.Errorf("the plugin folder: %w", err)
	case len(entries) > 0:
		// The manifest first: a folder that is not this marketplace is not walked.
		if name := marketplaceName(dir); name != mkt {
			return 0, fmt.Errorf("%s is not empty and holds no %s plugin marketplace (%s names %q): name a new or empty folder with --dir", dir, mkt, marketplaceFile, name)
		}
		same, foreign, err := surveyPlugin(dir, files)
		if err != nil || same {
			return pluginCurrent, err
		}
		if len(foreign) > 0 {
			return 0, fmt.Errorf("%s holds files that are not the %s plugin marketplace's (%s): move them out of it, or name a new or empty folder with --dir", dir, mkt, strings.Join(foreign, ", "))
		}
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return 0, fmt.Errorf("the plugin folder: %w", err)
	}
	staged, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return 0, fmt.Errorf("the plugin folder: %w", err)
	}
	defer os.RemoveAll(staged) // nothing is left there once it is renamed into place
	if err := os.Chmod(staged, 0o755); err != nil {
		return 0, fmt.Errorf("the plugin folder: %w", err)
	}
	for name, b := range files {
		p := filepath.Join(staged, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, fmt.Errorf("write the plugin: %w", err)
		}
		if err := os.WriteFile(p, b, pluginFileMode(name)); err != nil {
			return 0, fmt.Errorf("write the plugin: %w", err)
		}
	}
	if len(entries) == 0 {
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			return 0, fmt.Errorf("the plugin folder: %w", err)
		}
		if err := os.Rename(staged, dir); err != nil {
			return 0, fmt.Errorf("the plugin folder: %w", err)
		}
		return pluginCreated, nil
	}
	// No portable call swaps two folders: the old one steps aside, the new
	// one takes its name, and the old one goes (or comes back on failure).
	old := staged + ".old"
	if err := os.Rename(dir, old); err != nil {
		return 0, fmt.Errorf("replace the plugin folder: %w", err)
	}
	if err := os.Rename(staged, dir); err != nil {
		if back := os.Rename(old, dir); back != nil {
			return 0, fmt.Errorf("replace the plugin folder: %w (the old copy is in %s: %v)", err, old, back)
		}
		return 0, fmt.Errorf("replace the plugin folder: %w", err)
	}
	if err := removeAll(old); err != nil {
		// The new copy is in place: the claude commands must still run.
		fmt.Fprintf(warn, "Warning: the plugin's old copy could not be deleted (%v): delete %s yourself.\n", err, old)
	}
	return pluginReplaced, nil
}

// surveyPlugin reports whether dir holds files and nothing else, and names
// (by slash path, at most maxForeignFiles of them) the files in it that are
// not among files.
func surveyPlugin(dir string, files map[string][]byte) (same bool, foreign []string, err error) {
	fsys, seen := os.DirFS(dir), 0
	same = true
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, ok := files[name]; !ok {
			same, foreign = false, append(foreign, name)
			if len(foreign) == maxForeignFiles {
				return fs.SkipAll
			}
			return nil
		}
		if same {
			same, err = sameFile(fsys, name, d, files)
		}
		seen++
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("read the plugin folder: %w", err)
	}
	return same && seen == len(files), foreign, nil
}

// sameFile reports whether the file name of fsys (d) is files[name]: a
// regular file with that content and, where files have one (not on
// Windows), the executable bit pluginFileMode gives it.
func sameFile(fsys fs.FS, name string, d fs.DirEntry, files map[string][]byte) (bool, error) {
	want, ok := files[name]
	if !ok || !d.Type().IsRegular() {
		return false, nil
	}
	st, err := d.Info()
	if err != nil {
		return false, err
	}
	if st.Size() != int64(len(want)) || runtime.GOOS != "windows" && st.Mode()&0o100 != pluginFileMode(name)&0o100 {
		return false, nil
	}
	b, err := fs.ReadFile(fsys, name)
	return err == nil && bytes.Equal(b, want), err
}

// marketplaceName is the name the marketplace manifest in dir gives, or ""
// when there is none or it is unreadable.
func marketplaceName(dir string) string {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(marketplaceFile)))
	if err != nil {
		return ""
	}
	defer f.Close()
	var m pluginMarketplace
	if json.NewDecoder(io.LimitReader(f, maxMarketplaceFile)).Decode(&m) != nil {
		return ""
	}
	return m.Name
}

// commandLine joins a command's words for a person to paste, quoting the
// words a shell would split or expand.
func commandLine(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		switch {
		case w != "" && !strings.ContainsFunc(w, func(r rune) bool { return strings.ContainsRune(" \t\n'\"$`\\*?[]{}()<>|&;#~!%^", r) }):
			out[i] = w
		case runtime.GOOS == "windows":
			out[i] = `"` + w + `"` // cmd and PowerShell; a path holds no "
		default:
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
