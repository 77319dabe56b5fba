package app

import (
	"github.com/wailsapp/wails/v2/pkg/menu"
)

// Runtime is the part of the Wails runtime the app uses. Business code and
// tests never call Wails' runtime package directly (it exits the process
// when called without a Wails context); the window app passes wailsRuntime,
// tests a fake.
type Runtime interface {
	EventsEmit(name string, data ...any)
	Show()
	Quit()
	SetTitle(title string)
	Size() (w, h int)
	Position() (x, y int)
	SetSize(w, h int)
	SetPosition(x, y int)
	ExecJS(js string)
	// Alert shows a native error dialog and waits for it to be closed.
	Alert(title, message string)
	// Ask shows a native yes/no question and reports whether yes was chosen.
	Ask(title, message string) bool
	// Info shows a native information dialog and waits for it to be closed.
	Info(title, message string)
	// PickFolder shows the native folder picker; "" when cancelled.
	PickFolder(title, start string) (string, error)
	// PickFile shows the native file picker; "" when cancelled.
	PickFile(title, start string) (string, error)
	// SetMenu replaces the application menu and shows the new one.
	SetMenu(m *menu.Menu)
}
