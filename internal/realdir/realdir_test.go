//go:build unix

package realdir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/realdir"
)

// Ensures a folder counts when it is one of the roots or below one, by
// path text alone.
func TestInside(t *testing.T) {
	roots := []string{"/src/app", "/src/lib/", "/data"}
	for _, tc := range []struct {
		folder string
		want   bool
	}{
		{"/src/app", true},
		{"/src/app/cmd", true},
		{"/src/lib/", true},
		{"/data/x", true},
		{"/docs", false},
		{"/ro", false},
		{"/src/application", false},
		{"/src", false},
		{"/src/app/../other", false},
		{"src/app", false},
		{"", false},
	} {
		if got := realdir.Inside(tc.folder, roots); got != tc.want {
			t.Errorf("Inside(%q, %q) = %v, want %v", tc.folder, roots, got, tc.want)
		}
	}
}

// Ensure a session folder is checked on the file system: a folder inside
// the roots passes (also under a root given through a link), one reached
// through a link inside a root (to the relay's data folder), a file, a
// missing folder or one outside the roots does not, and the error names
// no path; Keep, the filter form, answers the same (asked twice, the
// second answer remembered).
func TestWithin(t *testing.T) {
	base := t.TempDir()
	work, data := filepath.Join(base, "work"), filepath.Join(base, "data")
	for _, d := range []string{filepath.Join(work, "sub"), data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(data, filepath.Join(work, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(work, filepath.Join(base, "worklink")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		folder string
		roots  []string
		ok     bool
	}{
		{work, []string{work}, true},
		{filepath.Join(work, "sub"), []string{work}, true},
		{filepath.Join(work, "sub"), []string{filepath.Join(base, "worklink")}, true},
		{filepath.Join(work, "x"), []string{work}, false},
		{filepath.Join(work, "x", "deeper"), []string{work}, false},
		{filepath.Join(base, "worklink", "sub"), []string{work}, false},
		{filepath.Join(work, "f"), []string{work}, false},
		{filepath.Join(work, "gone"), []string{work}, false},
		{data, []string{work}, false},
		{"relative", []string{work}, false},
	} {
		got, err := realdir.Within(tc.folder, tc.roots)
		if (err == nil) != tc.ok || (tc.ok && got != filepath.Clean(tc.folder)) {
			t.Errorf("Within(%q, %q) = %q, %v; want ok %v", tc.folder, tc.roots, got, err, tc.ok)
		}
		keep := realdir.Keep(tc.roots)
		if first, again := keep(tc.folder), keep(tc.folder); first != (err == nil) || again != first {
			t.Errorf("Keep(%q)(%q) differs from Within's %v", tc.roots, tc.folder, err)
		}
		if err != nil && (!errors.Is(err, realdir.ErrOutside) || strings.Contains(err.Error(), base)) {
			t.Errorf("Within(%q): error %v names a path or is not ErrOutside", tc.folder, err)
		}
	}
}
