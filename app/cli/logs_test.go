package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// appendLine appends line to the log at path, first moving the log to
// path.1 when rotate is set, as the relay's rotating log does.
func appendLine(t *testing.T, path, line string, rotate bool) {
	t.Helper()
	if rotate {
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(line)
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}

// Ensure tail prints the last lines.
func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	var lines strings.Builder
	for i := range 12 {
		fmt.Fprintf(&lines, "line %02d......\n", i)
	}
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
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
	if err := os.WriteFile(path, []byte("before follow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	size, _ := os.Stat(path)
	ctx, cancel := context.WithCancel(context.Background())
	var out testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- followFile(ctx, path, size.Size(), &out, 5*time.Millisecond) }()
	// The file rotates before every other line, as the relay's log would
	// (renamed to .1, a new file in its place). Each line is awaited before
	// the next (a follower polls; a file rotated twice between two polls
	// loses the middle one, as with tail -F).
	for i := range 6 {
		line := fmt.Sprintf("followed %d ........\n", i)
		appendLine(t, path, line, i%2 == 1)
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
