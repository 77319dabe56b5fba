package app

import (
	"os"
	"strings"
	"sync"

	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// System holds the actions that touch this computer rather than the relay:
// start at login, the data folder, the admin token, quitting. Over the
// bridge they are allowed only from loopback (see bridgeAccess).
type System struct {
	c *core

	mu   sync.Mutex
	quit func()
	show func()
	rt   Runtime
	// autostart is replaced in tests.
	autostart func() autostarter
	// focus is the window's focus, for notifications (window app only).
	focus *Focus
}

// autostarter is the part of desktop.Autostart System uses.
type autostarter interface {
	Enabled() (bool, error)
	Enable() error
	Disable() error
}

func defaultAutostart() autostarter { return AutostartWith(nil) }

// AutostartWith is the login entry that starts this program hidden with args.
func AutostartWith(args []string) *desktop.Autostart {
	exe, err := os.Executable()
	if err != nil {
		exe = "crosschat-relay"
	}
	return desktop.Login(exe, args...)
}

// launchFlags are the flags of a launch to repeat at login: all but
// --hidden (the entry adds it), with the data folder made absolute (a login
// start runs in another working directory).
func launchFlags(args []string, dataDir string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
			out = append(out, a)
		case name == "hidden":
		case name == "data-dir":
			if !hasValue && i+1 < len(args) {
				i++
			}
			out = append(out, "--data-dir="+dataDir)
		default:
			out = append(out, a)
		}
	}
	return out
}

// setLaunchArgs makes start at login repeat the flags the app was started with.
func (s *System) setLaunchArgs(args []string, dataDir string) {
	flags := launchFlags(args, dataDir)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.autostart = func() autostarter { return AutostartWith(flags) }
}

// setQuit sets what Quit does: quit the window app, or stop `serve`.
func (s *System) setQuit(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quit = f
}

// setShow sets what Show does; only the window app can show itself.
func (s *System) setShow(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.show = f
}

// hook returns *h (what Show or Quit does), read under s.mu.
func (s *System) hook(h *func()) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *h
}

// Show brings the window app's window to the front. A second launch of the
// app calls it on the first one when the system has no single-instance
// service (e.g. no D-Bus session).
func (s *System) Show() error {
	f := s.hook(&s.show)
	if f == nil {
		return relay.Errorf(relay.EInvalidRequest, "This relay runs without a window (serve); open its dashboard in a browser instead.")
	}
	f()
	return nil
}

func (s *System) setRuntime(rt Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rt = rt
}

func (s *System) window() (Runtime, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rt == nil {
		return nil, relay.Errorf(relay.EInvalidRequest, "The folder picker needs the Crosschat Relay window; type the path instead.")
	}
	return s.rt, nil
}

// PickFolder shows the native folder picker (window app only) and returns
// the chosen folder, or "" when cancelled.
func (s *System) PickFolder(title, start string) (string, error) {
	rt, err := s.window()
	if err != nil {
		return "", err
	}
	return rt.PickFolder(title, start)
}

// PickProgram shows the native file picker for a program (window app
// only) and returns its path, or "" when cancelled.
func (s *System) PickProgram(title, start string) (string, error) {
	rt, err := s.window()
	if err != nil {
		return "", err
	}
	return rt.PickFile(title, start)
}

// StartsAtLogin reports whether the app starts (hidden) when the user logs in.
func (s *System) StartsAtLogin() (bool, error) {
	return s.entry().Enabled()
}

func (s *System) entry() autostarter {
	s.mu.Lock()
	f := s.autostart
	s.mu.Unlock()
	return f()
}

// SetStartAtLogin turns starting at login on or off and returns the new state.
func (s *System) SetStartAtLogin(on bool) (bool, error) {
	a := s.entry()
	var err error
	if on {
		err = a.Enable()
	} else {
		err = a.Disable()
	}
	if err != nil {
		return false, err
	}
	return a.Enabled()
}

// RevealDataFolder opens the data folder in the system's file manager.
func (s *System) RevealDataFolder() error {
	return shownError(desktop.OpenFolder(s.c.config().DataDir))
}

// AdminToken returns the admin token, for copying into other tools.
func (s *System) AdminToken() (string, error) {
	return s.c.config().AdminToken(false)
}

// Quit stops the relay cleanly: the desktop app quits, `serve` exits.
func (s *System) Quit() error {
	f := s.hook(&s.quit)
	if f == nil {
		return relay.Errorf(relay.EInternal, "This relay cannot be stopped from here.")
	}
	go f()
	return nil
}

// bridgeAccess is every bound method a caller of the HTTP bridge may
// reach, with who may reach it. Remote methods are the relay's own work
// (tasks, agents, invites, the overview); everything that touches this
// computer (its files, programs, start-up, the window, the admin token) or
// the relay's limits is local-only: loopback and not proxied. A method that
// is not listed cannot be called over the bridge at all (the window calls
// bound methods directly and is not affected); TestBridgeAccessTable fails
// when a new exported method of a bound service is missing here.
var bridgeAccess = map[string]web.Access{
	"Tasks.List":           web.Remote,
	"Tasks.Get":            web.Remote,
	"Tasks.Activity":       web.Remote,
	"Tasks.Post":           web.Remote,
	"Tasks.Cancel":         web.Remote,
	"Tasks.Requeue":        web.Remote,
	"Tasks.RequestChanges": web.Remote,
	"Tasks.FilePreview":    web.LocalOnly,
	"Tasks.RevealFile":     web.LocalOnly,

	"Agents.List":          web.Remote,
	"Agents.Create":        web.Remote,
	"Agents.CreateAt":      web.Remote,
	"Agents.Update":        web.Remote,
	"Agents.Delete":        web.Remote,
	"Agents.RevokeToken":   web.Remote,
	"Agents.RotateToken":   web.Remote,
	"Agents.RotateTokenAt": web.Remote,
	"Agents.Retire":        web.Remote,
	"Agents.Reinstate":     web.Remote,

	"Invites.List":     web.Remote,
	"Invites.Create":   web.Remote,
	"Invites.CreateAt": web.Remote,
	"Invites.Revoke":   web.Remote,

	"Overview.Info":   web.Remote,
	"Overview.InfoAt": web.Remote,
	"Overview.Stats":  web.Remote,
	"Events.List":     web.Remote,

	// The charts read the relay's own work, as the lists do.
	"Insights.Activity":     web.Remote,
	"Insights.Agents":       web.Remote,
	"Insights.Conversation": web.Remote,

	"Settings.Get":    web.Remote,
	"Settings.Update": web.LocalOnly,

	"Workers.List":      web.LocalOnly,
	"Workers.Limits":    web.LocalOnly,
	"Workers.Local":     web.LocalOnly,
	"Workers.Save":      web.LocalOnly,
	"Workers.Remove":    web.LocalOnly,
	"Workers.SetPaused": web.LocalOnly,
	"Workers.Connect":   web.LocalOnly,
	"Workers.Sessions":  web.LocalOnly,

	"Mesh.Status":     web.Remote,
	"Mesh.Agents":     web.Remote,
	"Mesh.Relays":     web.Remote,
	"Mesh.Held":       web.Remote,
	"Mesh.Credential": web.Remote,
	"Mesh.Names":      web.Remote,
	"Mesh.Contests":   web.Remote,
	"Mesh.KeyChanges": web.Remote,
	// Admitting a relay, giving a plain name to another relay's agent, the
	// invite (it lets a relay into the embedded server) and the users of an
	// external cluster are for the operator at this computer.
	"Mesh.Trust":      web.LocalOnly,
	"Mesh.Block":      web.LocalOnly,
	"Mesh.GiveName":   web.LocalOnly,
	"Mesh.Invite":     web.LocalOnly,
	"Mesh.NATSConfig": web.LocalOnly,
	// Mesh settings name files on this computer and where the relay connects.
	"Mesh.MeshSettings":     web.LocalOnly,
	"Mesh.SaveMeshSettings": web.LocalOnly,

	"System.Show":             web.LocalOnly,
	"System.PickFolder":       web.LocalOnly,
	"System.PickProgram":      web.LocalOnly,
	"System.StartsAtLogin":    web.LocalOnly,
	"System.SetStartAtLogin":  web.LocalOnly,
	"System.RevealDataFolder": web.LocalOnly,
	"System.AdminToken":       web.LocalOnly,
	"System.Quit":             web.LocalOnly,
	"System.ReportFocus":      web.LocalOnly,
}

// bridgeMethodAccess looks a method up in bridgeAccess; unlisted methods
// are web.NotCallable.
func bridgeMethodAccess(service, method string) web.Access {
	return bridgeAccess[service+"."+method]
}
