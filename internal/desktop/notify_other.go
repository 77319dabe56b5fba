//go:build !linux && !windows

package desktop

import (
	"os/exec"
	"runtime"
	"strconv"
)

// scriptNotifier posts to the macOS notification centre with osascript
// (display notification). A click opens Script Editor's context, not the
// task: a clickable notification needs the UserNotifications framework in
// a signed app bundle.
type scriptNotifier struct{}

func newNotifier(func(string)) (Notifier, error) {
	if runtime.GOOS != "darwin" {
		return nil, ErrNoNotifications
	}
	return scriptNotifier{}, nil
}

func (scriptNotifier) Notify(n Notification) error {
	script := "display notification " + strconv.Quote(n.Body) + " with title " + strconv.Quote(n.Title)
	if err := exec.Command("osascript", "-e", script).Run(); err != nil {
		return notifyErr(err)
	}
	return nil
}

func (scriptNotifier) Close() error { return nil }
