package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure the log file rotates to .1 when a write would pass the limit, and
// that tail prints the last lines.
func TestRotatingLogAndTail(t *testing.T) {
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
	tests := []struct {
		n    int
		want string
	}{
		{1, "line 11......\n"},
		{2, "line 10......\nline 11......\n"},
		{0, ""},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if _, err := tail(path, tt.n, &b); err != nil || b.String() != tt.want {
			t.Errorf("tail -n %d: %q, %v; want %q", tt.n, b.String(), err, tt.want)
		}
	}
}

// Ensure `logs -f` prints appended lines and carries on across a rotation.
func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	f, err := openRotating(path, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "before follow")
	size, _ := os.Stat(path)
	ctx, cancel := context.WithCancel(context.Background())
	var out testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- followFile(ctx, path, size.Size(), &out, 5*time.Millisecond) }()
	// 20 bytes a line: the file rotates every other line. Each line is
	// awaited before the next (a follower polls; a file rotated twice
	// between two polls loses the middle one, as with tail -F).
	for i := range 6 {
		line := fmt.Sprintf("followed %d ........\n", i)
		fmt.Fprint(f, line)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), line) && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Contains(got, "before follow") {
		t.Fatalf("printed lines from before the follow started: %q", got)
	}
	for i := range 6 {
		if !strings.Contains(got, fmt.Sprintf("followed %d", i)) {
			t.Errorf("missing line %d in %q", i, got)
		}
	}
}
