package app

import (
	"context"

	"github.com/wailsapp/wails/v2/pkg/menu"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"
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

// wailsRuntime is Runtime over the real Wails runtime and its context.
type wailsRuntime struct{ ctx context.Context }

func (r wailsRuntime) EventsEmit(name string, data ...any) { wruntime.EventsEmit(r.ctx, name, data...) }
func (r wailsRuntime) Show() {
	wruntime.WindowUnminimise(r.ctx)
	wruntime.WindowShow(r.ctx)
}
func (r wailsRuntime) Quit()                 { wruntime.Quit(r.ctx) }
func (r wailsRuntime) SetTitle(title string) { wruntime.WindowSetTitle(r.ctx, title) }
func (r wailsRuntime) Size() (int, int)      { return wruntime.WindowGetSize(r.ctx) }
func (r wailsRuntime) Position() (int, int)  { return wruntime.WindowGetPosition(r.ctx) }
func (r wailsRuntime) SetSize(w, h int)      { wruntime.WindowSetSize(r.ctx, w, h) }
func (r wailsRuntime) SetPosition(x, y int)  { wruntime.WindowSetPosition(r.ctx, x, y) }
func (r wailsRuntime) ExecJS(js string)      { wruntime.WindowExecJS(r.ctx, js) }
func (r wailsRuntime) PickFolder(title, start string) (string, error) {
	return wruntime.OpenDirectoryDialog(r.ctx, wruntime.OpenDialogOptions{Title: title, DefaultDirectory: start, CanCreateDirectories: true})
}
func (r wailsRuntime) PickFile(title, start string) (string, error) {
	return wruntime.OpenFileDialog(r.ctx, wruntime.OpenDialogOptions{Title: title, DefaultDirectory: start})
}
func (r wailsRuntime) SetMenu(m *menu.Menu) {
	wruntime.MenuSetApplicationMenu(r.ctx, m)
	wruntime.MenuUpdateApplicationMenu(r.ctx)
}
func (r wailsRuntime) Ask(title, message string) bool {
	answer, err := wruntime.MessageDialog(r.ctx, wruntime.MessageDialogOptions{Type: wruntime.QuestionDialog, Title: title, Message: message,
		Buttons: []string{"Yes", "No"}, DefaultButton: "Yes", CancelButton: "No"})
	return err == nil && answer == "Yes"
}
func (r wailsRuntime) Info(title, message string) {
	_, _ = wruntime.MessageDialog(r.ctx, wruntime.MessageDialogOptions{Type: wruntime.InfoDialog, Title: title, Message: message})
}
func (r wailsRuntime) Alert(title, message string) {
	_, _ = wruntime.MessageDialog(r.ctx, wruntime.MessageDialogOptions{Type: wruntime.ErrorDialog, Title: title, Message: message})
}
