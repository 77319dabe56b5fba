package desktop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure each system gets its own opener and reveal command.
func TestOpener(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.png")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		goos   string
		reveal bool
		want   string
	}{
		{"windows", true, "explorer.exe /select," + file},
		{"windows", false, "rundll32 url.dll,FileProtocolHandler " + file},
		{"darwin", true, "open -R " + file},
		{"darwin", false, "open " + file},
		{"linux", true, "xdg-open " + dir},
		{"linux", false, "xdg-open " + file},
	}
	for _, tt := range tests {
		name, args := opener(tt.goos, file, tt.reveal)
		if got := name + " " + strings.Join(args, " "); got != tt.want {
			t.Errorf("%s reveal=%v: %q, want %q", tt.goos, tt.reveal, got, tt.want)
		}
	}
}
