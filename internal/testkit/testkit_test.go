package testkit_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensures writers on many goroutines lose no byte and a reader sees all
// of it (run with -race).
func TestBufferConcurrentWriters(t *testing.T) {
	var b testkit.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				fmt.Fprintf(&b, "%d.%d\n", i, j)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("got %d lines, want 800", n)
	}
}

// Ensures the port is a loopback port one can listen on.
func TestFreePortCanBeListenedOn(t *testing.T) {
	p := testkit.FreePort(t)
	if p <= 0 || p > 65535 {
		t.Fatalf("port %d", p)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("listen on the free port: %v", err)
	}
	ln.Close()
}
