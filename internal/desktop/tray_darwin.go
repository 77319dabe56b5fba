//go:build darwin

package desktop

func iconBytes(p []byte, _, _ int) []byte { return p }

// Tray is not available on macOS: fyne.io/systray's Cocoa code installs its
// own application delegate, which clashes with Wails'. The application menu
// carries the same items there (see docs/install.md).
type Tray struct{}

// StartTray reports ErrNoTray on macOS.
func StartTray(map[TrayState][]byte, TrayModel, TrayActions) (*Tray, error) { return nil, ErrNoTray }

// Update does nothing.
func (*Tray) Update(TrayModel) {}

// Stop does nothing.
func (*Tray) Stop() {}
