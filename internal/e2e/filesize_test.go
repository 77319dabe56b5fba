package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxGoLines bounds a hand-written Go file, tests included: a file past it
// holds more than one job and is split by job (docs/architecture.md).
const maxGoLines = 500

// Ensure no hand-written Go file of the module is longer than maxGoLines.
func TestGoFilesStaySmall(t *testing.T) {
	root := filepath.Join("..", "..") // the module root, from internal/e2e
	var long []string
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || d.Name() == "frontend" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if n := bytes.Count(b, []byte("\n")); n > maxGoLines {
			rel, _ := filepath.Rel(root, path)
			long = append(long, fmt.Sprintf("%s (%d lines)", filepath.ToSlash(rel), n))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files found under %s", checked, root)
	}
	if len(long) > 0 {
		t.Errorf("Go files over %d lines; split them by job:\n  %s", maxGoLines, strings.Join(long, "\n  "))
	}
}
