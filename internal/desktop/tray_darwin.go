//go:build darwin

package desktop

import "errors"

func iconBytes(p []byte, _, _ int) []byte { return p }

// Tray is not available on macOS: fyne.io/systray's Cocoa code installs its
// own application delegate, which clashes with Wails'. The app menu and
// the Dock menu carry the same items there (see docs/install.md).
type Tray struct{}

// ErrNoTray is returned by StartTray where there is no tray.
var ErrNoTray = errors.New("no tray icon on this system; the app menu has the same items")

// StartTray reports ErrNoTray on macOS.
func StartTray(map[TrayState][]byte, TrayModel, TrayActions) (*Tray, error) { return nil, ErrNoTray }

// Update does nothing.
func (*Tray) Update(TrayModel) {}

// Stop does nothing.
func (*Tray) Stop() {}
