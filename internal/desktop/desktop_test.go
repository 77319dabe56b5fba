package desktop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure each system gets its own opener, reveal and folder command, and
// a revealed path is never handed to Linux's opener, which would open it
// (a folder swapped for a file by a later run), only its folder.
func TestOpener(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.desktop")
	if err := os.Mkdir(file, 0o700); err != nil { // a folder when asked to show it
		t.Fatal(err)
	}
	tests := []struct {
		goos string
		how  showing
		want string
	}{
		{"windows", revealIt, "explorer.exe /select," + file},
		{"windows", openIt, "rundll32 url.dll,FileProtocolHandler " + file},
		{"windows", folderIt, "explorer.exe " + file},
		{"darwin", revealIt, "open -R " + file},
		{"darwin", openIt, "open " + file},
		{"darwin", folderIt, "open " + file},
		{"linux", revealIt, "xdg-open " + dir},
		{"linux", openIt, "xdg-open " + file},
		{"linux", folderIt, "xdg-open " + file},
	}
	for _, tt := range tests {
		name, args := opener(tt.goos, file, tt.how)
		if got := name + " " + strings.Join(args, " "); got != tt.want {
			t.Errorf("%s showing %d: %q, want %q", tt.goos, tt.how, got, tt.want)
		}
	}
}
