package desktop

import (
	"fmt"

	"github.com/godbus/dbus/v5"
)

// traySessionBus checks that the session bus systray is going to use
// answers. Without one systray starts only half-way, and its exit then
// closes a connection it never had: a nil dereference, which is fatal in
// the window app (the web view owns the SIGSEGV handler). So the app runs
// without a tray instead.
func traySessionBus() error {
	if _, err := dbus.SessionBus(); err != nil {
		return fmt.Errorf("no D-Bus session bus for the tray: %w", err)
	}
	return nil
}
