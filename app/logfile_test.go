package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure the log file rotates to .1 when a write would pass the limit.
func TestRotatingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	f, err := openRotating(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		fmt.Fprintf(f, "line %02d......\n", i) // 15 bytes
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if len(cur) > 100 || len(old) > 100 || !strings.HasPrefix(string(old), "line 00") || !strings.HasSuffix(string(cur), "line 11......\n") {
		t.Fatalf("current %q, rotated %q", cur, old)
	}
}
