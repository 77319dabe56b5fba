//go:build linux

package desktop_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure enable writes an XDG autostart entry that starts the app hidden,
// and disable removes it. go-autostart reads XDG_CONFIG_HOME at package
// init, so the check runs in a child process with its own environment.
func TestAutostartXDG(t *testing.T) {
	if os.Getenv("CROSSCHAT_AUTOSTART_CHILD") == "1" {
		return
	}
	cfg := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=TestAutostartChild", "-test.v")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "CROSSCHAT_AUTOSTART_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("child did not pass:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(cfg, "autostart", "crosschat-relay.desktop")); !os.IsNotExist(err) {
		t.Fatalf("entry left behind after disable: %v", err)
	}
}
