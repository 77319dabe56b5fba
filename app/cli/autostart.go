package cli

import (
	"errors"
	"flag"
	"io"
	"path/filepath"

	"github.com/crosschat/crosschat-relay/app"
)

// autostartCmd is `crosschat-relay autostart enable|disable|status`: start
// the app, hidden, at login, with this command's location flags.
func autostartCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("autostart", args, "enable", "disable", "status")
	if err != nil {
		return err
	}
	c, err := parseCommand("autostart "+action, rest, stdout, stderr, nil)
	if err != nil {
		return err
	}
	// The location flags given here are repeated at login.
	var flags []string
	c.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "port", "host":
			flags = append(flags, "--"+f.Name+"="+f.Value.String())
		case "data-dir":
			if abs, err := filepath.Abs(f.Value.String()); err == nil {
				flags = append(flags, "--data-dir="+abs)
			}
		}
	})
	a := app.AutostartWith(flags)
	switch action {
	case "enable":
		if !windowBuild {
			return errors.New("this build has no window, so a login entry that starts the app would fail: run the relay as a service instead, started at login and restarted on failure: crosschat-relay service install (with the same --host, --port, --data-dir)")
		}
		err = a.Enable()
	case "disable":
		err = a.Disable()
	}
	if err != nil {
		return err
	}
	on, err := a.Enabled()
	if err != nil {
		return err
	}
	return c.report("enabled", on, "Crosschat Relay starts (hidden) when you log in.", "Crosschat Relay does not start when you log in.")
}
