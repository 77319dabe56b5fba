//go:build linux

package desktop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/desktop"
)

// TestAutostartChild runs inside TestAutostartXDG's child process.
func TestAutostartChild(t *testing.T) {
	if os.Getenv("CROSSCHAT_AUTOSTART_CHILD") != "1" {
		t.Skip("runs as TestAutostartXDG's child")
	}
	a := desktop.Login("/opt/Crosschat Relay/crosschat-relay")
	if on, _ := a.Enabled(); on {
		t.Fatal("enabled before enable")
	}
	if err := a.Enable(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "autostart", "crosschat-relay.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `Exec="/opt/Crosschat Relay/crosschat-relay" "--hidden"`) || !strings.Contains(string(b), "Name=Crosschat Relay") {
		t.Fatalf("entry:\n%s", b)
	}
	if on, _ := a.Enabled(); !on {
		t.Fatal("not enabled after enable")
	}
	if err := a.Disable(); err != nil {
		t.Fatal(err)
	}
	if err := a.Disable(); err != nil {
		t.Fatalf("second disable: %v", err)
	}
	if on, _ := a.Enabled(); on {
		t.Fatal("still enabled after disable")
	}
}
