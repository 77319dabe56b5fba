package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// windowBuild's two files carry the build constraints of app/shell's
// WindowBuild (which this package may not import), so that autostart
// enable refuses exactly on the builds whose app has no window.
func TestWindowBuildTagsAreTheShells(t *testing.T) {
	for _, f := range []string{"build_headless.go", "build_window.go"} {
		constraint := func(path string) string {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			return first
		}
		if mine, shells := constraint(f), constraint(filepath.Join("..", "shell", f)); mine != shells || !strings.HasPrefix(mine, "//go:build ") {
			t.Errorf("%s: %q, app/shell's %q", f, mine, shells)
		}
	}
}
