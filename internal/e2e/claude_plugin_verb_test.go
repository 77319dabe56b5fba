//go:build unix

package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// installedPlugin is an entry of `claude plugin list --json`.
type installedPlugin struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Enabled     bool   `json:"enabled"`
	InstallPath string `json:"installPath"`
}

// TestClaudePluginVerb installs the plugin the way a packaged install does,
// with no checkout: `crosschat-relay claude-plugin` (the built binary and
// the marketplace embedded in it) and the real Claude Code CLI, in a
// temporary HOME. The folder it writes is exactly build/claude-plugin;
// Claude Code then lists crosschat@crosschat-relay, enabled, at the
// marketplace's version, with the plugin's files; a version installed from
// an older copy is updated, also when an earlier run with --print replaced
// the folder and ran nothing; running it again changes nothing (the four
// claude commands succeed on an installed plugin); --dir takes a folder with
// a space in its name.
func TestClaudePluginVerb(t *testing.T) {
	clis := cliFolder(t, "claude")
	claude := filepath.Join(clis, "claude")
	src := pluginDir(t)
	var mkt struct {
		Plugins []struct{ Version string } `json:"plugins"`
	}
	b, err := os.ReadFile(filepath.Join(src, ".claude-plugin", "marketplace.json"))
	if err != nil || json.Unmarshal(b, &mkt) != nil || len(mkt.Plugins) != 1 {
		t.Fatalf("the repository's marketplace.json: %v %s", err, b)
	}
	version := mkt.Plugins[0].Version

	root := newRoot(t)
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		// crosschat-relay and claude on PATH, as installed ones would be.
		"PATH=" + filepath.Dir(relayBinary(t)) + ":" + clis + ":" + os.Getenv("PATH"),
		"LANG=C.UTF-8", "DISABLE_AUTOUPDATER=1",
		// Nothing leaves loopback: everything else goes to a closed port.
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Dir = env, root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	verb := func(args ...string) string {
		t.Helper()
		return run(relayBinary(t), append([]string{"claude-plugin"}, args...)...)
	}
	// installed checks Claude Code lists the plugin at want, enabled, with
	// the plugin's own files where it says it installed them.
	installed := func(want string) {
		t.Helper()
		out := run(claude, "plugin", "list", "--json")
		var list []installedPlugin
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("claude plugin list --json: %v\n%s", err, out)
		}
		i := slices.IndexFunc(list, func(p installedPlugin) bool { return p.ID == "crosschat@crosschat-relay" })
		if i < 0 {
			t.Fatalf("Claude Code does not list crosschat@crosschat-relay:\n%s", out)
		}
		if p := list[i]; p.Version != want || !p.Enabled {
			t.Fatalf("Claude Code has %+v, want version %s enabled", p, want)
		}
		testkit.SameTree(t, list[i].InstallPath, filepath.Join(src, "crosschat"))
	}

	// --print: the folder in the user's config folder, the commands printed.
	def := filepath.Join(home, ".config", "crosschat-relay", "claude-plugin")
	if out := verb("--print"); !strings.Contains(out, "claude plugin marketplace add "+def+"\n") || !strings.Contains(out, "claude plugin install crosschat@crosschat-relay\n") {
		t.Fatalf("claude-plugin --print:\n%s", out)
	}
	testkit.SameTree(t, def, src)

	// older makes the folder an older version and has Claude Code install
	// it from there; the claude commands it runs are the verb's four.
	older := func() {
		t.Helper()
		for _, f := range []string{".claude-plugin/marketplace.json", "crosschat/.claude-plugin/plugin.json"} {
			p := filepath.Join(def, f)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), `"version": "`+version+`"`, `"version": "0.0.1"`)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(claude, "plugin", "marketplace", "add", def)
		run(claude, "plugin", "marketplace", "update", "crosschat-relay")
		run(claude, "plugin", "install", "crosschat@crosschat-relay")
		run(claude, "plugin", "update", "crosschat@crosschat-relay")
		if out := run(claude, "plugin", "list", "--json"); !strings.Contains(out, `"version": "0.0.1"`) {
			t.Fatalf("the older version is not installed:\n%s", out)
		}
	}

	// The verb replaces an older version, and Claude Code takes the new one.
	older()
	if out := verb(); !strings.Contains(out, "Replaced the Claude Code plugin in "+def) || !strings.Contains(out, "Installed crosschat@crosschat-relay") {
		t.Fatalf("claude-plugin over an older version:\n%s", out)
	}
	testkit.SameTree(t, def, src)
	installed(version)

	// With --print it replaces the folder and runs nothing: Claude Code keeps
	// the older version until the verb runs again, which finds the folder up
	// to date and still has Claude Code update.
	older()
	if out := verb("--print"); !strings.Contains(out, "Replaced the Claude Code plugin in "+def) || !strings.Contains(out, "claude plugin update crosschat@crosschat-relay\n") {
		t.Fatalf("claude-plugin --print over an older version:\n%s", out)
	}
	if out := run(claude, "plugin", "list", "--json"); !strings.Contains(out, `"version": "0.0.1"`) {
		t.Fatalf("claude-plugin --print ran a claude command:\n%s", out)
	}
	if out := verb(); !strings.Contains(out, "is up to date in "+def) || !strings.Contains(out, "Installed crosschat@crosschat-relay") {
		t.Fatalf("claude-plugin after --print:\n%s", out)
	}
	testkit.SameTree(t, def, src)
	installed(version)

	// Again: nothing changes, and the claude commands still succeed.
	if out := verb(); !strings.Contains(out, "is up to date in "+def) || !strings.Contains(out, "Installed crosschat@crosschat-relay") {
		t.Fatalf("claude-plugin again:\n%s", out)
	}
	testkit.SameTree(t, def, src)
	installed(version)

	// Another person, another folder: installed from nothing with --dir.
	home = filepath.Join(root, "home2")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	env[0], env[1] = "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config")
	mine := filepath.Join(root, "Claude plugins", "crosschat")
	if out := verb("--dir", mine); !strings.Contains(out, "Wrote the Claude Code plugin") || !strings.Contains(out, "Installed crosschat@crosschat-relay") {
		t.Fatalf("claude-plugin --dir %q:\n%s", mine, out)
	}
	testkit.SameTree(t, mine, src)
	installed(version)
}
