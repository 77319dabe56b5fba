package worker

import (
	"slices"
	"strings"
	"testing"
)

// Ensure the paths a sandboxed run was refused are found in the error
// messages of the shell, coreutils, Node, Python and git, and nothing is
// taken from other lines.
func TestRefusedPaths(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"shell redirect", "sh: 1: cannot create /home/ada/.ssh/planted: Permission denied", []string{"/home/ada/.ssh/planted"}},
		{"cat", "cat: /home/ada/.local/share/crosschat-relay/api-token: Permission denied", []string{"/home/ada/.local/share/crosschat-relay/api-token"}},
		{"coreutils quoted", "touch: cannot touch '/srv/other/x': Permission denied", []string{"/srv/other/x"}},
		{"node", "Error: EACCES: permission denied, open '/home/ada/.config/tool/settings.json'", []string{"/home/ada/.config/tool/settings.json"}},
		{"node mkdir", "EPERM: operation not permitted, mkdir '/home/ada/.cache/x'", []string{"/home/ada/.cache/x"}},
		{"python", "PermissionError: [Errno 13] Permission denied: '/home/ada/notes.txt'", []string{"/home/ada/notes.txt"}},
		{"git", "fatal: unable to access '/home/ada/.gitconfig': Permission denied", []string{"/home/ada/.gitconfig"}},
		{"twice and two", "cat: /a/b: Permission denied\ncat: /a/b: Permission denied\nls: cannot open directory '/c': Permission denied", []string{"/a/b", "/c"}},
		{"no path", "Permission denied (publickey).\nerror: something else", nil},
		{"relative", "cat: notes.txt: Permission denied", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusedPaths(tt.text, 5); !slices.Equal(got, tt.want) {
				t.Fatalf("refusedPaths = %q, want %q", got, tt.want)
			}
		})
	}
	many := strings.Repeat("cat: /x/1: Permission denied\ncat: /x/2: Permission denied\ncat: /x/3: Permission denied\n", 3)
	if got := refusedPaths(many, 2); len(got) != 2 {
		t.Fatalf("bounded to 2: %q", got)
	}
	if hint := sandboxHint("", "cat: /a/b: Permission denied"); !strings.Contains(hint, "/a/b") || !strings.Contains(hint, "--allow-path") {
		t.Fatalf("hint %q", hint)
	}
	if hint := sandboxHint("all good", ""); hint != "" {
		t.Fatalf("hint without a refusal: %q", hint)
	}
}
