package shell

import (
	"context"

	"github.com/wailsapp/wails/v2/pkg/menu"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"
)

// wailsRuntime is app.Runtime over the real Wails runtime and its context.
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
