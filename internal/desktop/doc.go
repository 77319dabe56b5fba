// Package desktop integrates the relay with the user's desktop session:
// starting at login (github.com/emersion/go-autostart on Linux and macOS, a
// small HKCU Run registry value on Windows, where that package needs cgo),
// revealing a file in the system file manager and opening URLs.
package desktop

// AppName is the identifier of the login item.
const AppName = "crosschat-relay"

// DisplayName is the name shown in the system's startup settings.
const DisplayName = "Crosschat Relay"

// Autostart controls whether the app starts at login, hidden.
type Autostart struct {
	// Exec is the program and its arguments; Login adds --hidden.
	Exec []string
}

// Login returns the autostart entry for the program at exe, started with
// --hidden and then args (the flags the app was started with, such as
// --data-dir and --port, so the login start finds the same relay).
func Login(exe string, args ...string) *Autostart {
	return &Autostart{Exec: append([]string{exe, "--hidden"}, args...)}
}
