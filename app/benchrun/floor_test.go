package benchrun

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
)

// The floor service answers each request after committing it, and at the
// end of its stdin stops and leaves nothing in its folder.
func TestBenchFloorChild(t *testing.T) {
	dir := t.TempDir()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeFloor(dir, stdinR, stdoutW) }()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want ready http://127.0.0.1:PORT/", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := bench.ServiceFloor(ctx, url, 3, time.Millisecond)
	if err != nil || s.Count != 3 {
		t.Fatalf("ServiceFloor = %+v, %v; want 3 samples", s, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("%d files in the folder while serving, want its scratch file", len(left))
	}
	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeFloor: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the floor service did not stop at the end of stdin")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %d files in %s", len(left), dir)
	}
}
