package desktop

import (
	"path/filepath"
	"testing"
)

// Without a session bus the tray is refused up front: systray would start
// half-way and crash on Stop (the window app then died on quit).
func TestTrayWithoutSessionBusIsRefused(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	tray, err := StartTray(map[TrayState][]byte{}, TrayModel{}, TrayActions{})
	if err == nil {
		tray.Stop()
		t.Fatal("StartTray without a session bus succeeded")
	}
}
