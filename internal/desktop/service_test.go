package desktop

import (
	"strings"
	"testing"
)

// TestServiceRunsAsTheNamedUser: a system-wide service names the account it
// runs as (launchd's UserName, systemd's User=); a per-user one does not,
// and a Windows task at logon never runs as SYSTEM.
func TestServiceRunsAsTheNamedUser(t *testing.T) {
	exec := []string{"/opt/crosschat relay/crosschat-relay", "serve", "--data-dir", "/Users/ann/Library/Application Support/crosschat-relay"}
	for _, tc := range []struct {
		name, goos  string
		system      bool
		user        string
		want, never []string
	}{
		{"macOS daemon", "darwin", true, "ann", []string{"<key>UserName</key><string>ann</string>", "<string>/opt/crosschat relay/crosschat-relay</string>"}, nil},
		{"macOS agent", "darwin", false, "", []string{"<key>RunAtLoad</key>"}, []string{"UserName"}},
		{"macOS daemon, escaped name", "darwin", true, "a&b", []string{"<string>a&amp;b</string>"}, nil},
		{"Linux system unit", "linux", true, "ann", []string{"User=ann\n", "WantedBy=multi-user.target"}, nil},
		{"Linux user unit", "linux", false, "", []string{"WantedBy=default.target"}, []string{"User="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := Service{Exec: exec, System: tc.system, User: tc.user, GOOS: tc.goos, Home: "/home/ann"}.Definition()
			for _, w := range tc.want {
				if !strings.Contains(def, w) {
					t.Errorf("missing %q in\n%s", w, def)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(def, n) {
					t.Errorf("unexpected %q in\n%s", n, def)
				}
			}
		})
	}
	cmds := Service{Exec: exec, GOOS: "windows"}.managerCommands(true)
	create := strings.Join(cmds[0], " ")
	if !strings.Contains(create, "/SC ONLOGON") || strings.Contains(create, "SYSTEM") {
		t.Errorf("the per-user Windows task: %s", create)
	}
}
