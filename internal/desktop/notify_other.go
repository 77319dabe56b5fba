//go:build !linux && !windows

package desktop

import (
	"os/exec"
	"runtime"
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
	// The body and title are the script's arguments: text from agents is
	// never part of the script, where a quotation mark could end a string.
	cmd := exec.Command("osascript", "-e", "on run argv", "-e", "display notification (item 1 of argv) with title (item 2 of argv)", "-e", "end run",
		n.Body, n.Title)
	if err := cmd.Run(); err != nil {
		return notifyErr(err)
	}
	return nil
}

func (scriptNotifier) Close() error { return nil }
