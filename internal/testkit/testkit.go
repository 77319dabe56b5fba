// Package testkit holds the small helpers the tests of several packages
// share: a goroutine-safe output buffer, a free loopback port, a
// comparison of two folders' files and a helper process of the test binary
// (StartHelper). It imports
// only the standard library, and only tests import it (TestImportRules).
package testkit

import (
	"bytes"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for writer goroutines (a child's output
// copiers, a handler's logger) and a reader polling it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FreePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before the caller listens, so a caller that starts a
// server on it retries on "address already in use".
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// SameTree fails t unless the folder got holds the files of want and no
// others, each with the same content and, where files have one (not on
// Windows), the same executable bit.
func SameTree(t testing.TB, got, want string) {
	t.Helper()
	g, w := treeFiles(t, got), treeFiles(t, want)
	if !slices.Equal(slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w))) {
		t.Fatalf("%s holds %v, want the files of %s: %v", got, slices.Sorted(maps.Keys(g)), want, slices.Sorted(maps.Keys(w)))
	}
	for name, wf := range w {
		gf := g[name]
		if !bytes.Equal(gf.content, wf.content) {
			t.Errorf("%s differs from %s", filepath.Join(got, name), filepath.Join(want, name))
		}
		if runtime.GOOS != "windows" && gf.mode&0o111 != wf.mode&0o111 {
			t.Errorf("%s has mode %v, want %v as %s", filepath.Join(got, name), gf.mode, wf.mode, filepath.Join(want, name))
		}
	}
}

type treeFile struct {
	content []byte
	mode    fs.FileMode
}

// treeFiles reads every file below dir, by slash path.
func treeFiles(t testing.TB, dir string) map[string]treeFile {
	t.Helper()
	files := map[string]treeFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = treeFile{b, st.Mode().Perm()}
		return err
	})
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return files
}
