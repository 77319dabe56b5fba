// Package testkit holds the small helpers the tests of several packages
// share: a goroutine-safe output buffer and a free loopback port. It imports
// only the standard library, and only tests import it (TestImportRules).
package testkit

import (
	"bytes"
	"net"
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
