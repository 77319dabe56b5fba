package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure a replaced copy that cannot be deleted (on Windows, a file of it in
// use) costs a warning, not the claude commands: the new copy is in place,
// the old one is kept beside it and named, and the verb goes on to them.
func TestClaudePluginOldCopyKept(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "build", "claude-plugin"))
	if err != nil {
		t.Fatal(err)
	}
	savedFS, savedRemove := ClaudePlugin, removeAll
	t.Cleanup(func() { ClaudePlugin, removeAll = savedFS, savedRemove })
	ClaudePlugin = os.DirFS(src)
	dir := filepath.Join(t.TempDir(), "plugin")
	verb := func() (string, string, error) {
		var out, errs strings.Builder
		err := claudePluginCmd([]string{"--dir", dir, "--print"}, &out, &errs)
		return out.String(), errs.String(), err
	}
	if out, errs, err := verb(); err != nil {
		t.Fatalf("the first run: %v\n%s\n%s", err, out, errs)
	}
	// Another version (still this marketplace), whose deletion fails.
	manifest := filepath.Join(dir, filepath.FromSlash(marketplaceFile))
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	older := append(b, '\n')
	if err := os.WriteFile(manifest, older, 0o644); err != nil {
		t.Fatal(err)
	}
	removeAll = func(string) error { return errors.New("a file of it is in use") }

	out, errs, err := verb()
	if err != nil {
		t.Fatalf("a failed delete of the old copy is an error: %v\n%s\n%s", err, out, errs)
	}
	if !strings.Contains(out, "Replaced the Claude Code plugin in "+dir) || !strings.Contains(out, "  claude plugin update crosschat@crosschat-relay\n") {
		t.Fatalf("the output does not go on to the claude commands:\n%s", out)
	}
	testkit.SameTree(t, dir, src)
	olds, err := filepath.Glob(filepath.Join(filepath.Dir(dir), ".plugin.new-*.old"))
	if err != nil || len(olds) != 1 {
		t.Fatalf("the old copy beside the folder: %q %v", olds, err)
	}
	if got, err := os.ReadFile(filepath.Join(olds[0], filepath.FromSlash(marketplaceFile))); err != nil || string(got) != string(older) {
		t.Fatalf("the old copy kept is not the old version: %q %v", got, err)
	}
	if want := "Warning: the plugin's old copy could not be deleted (a file of it is in use): delete " + olds[0] + " yourself.\n"; errs != want {
		t.Fatalf("the warning is %q, want %q", errs, want)
	}
}
