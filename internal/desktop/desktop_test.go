package desktop

import (
	"path/filepath"
	"strings"
	"testing"
)

// Ensure each system gets its own opener, reveal and folder command.
func TestOpener(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.png")
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
