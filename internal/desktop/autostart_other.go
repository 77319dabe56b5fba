//go:build !windows

package desktop

import (
	"errors"
	"fmt"
	"os"

	"github.com/emersion/go-autostart"
)

func (a *Autostart) entry() *autostart.App {
	return &autostart.App{Name: AppName, DisplayName: DisplayName, Exec: a.Exec}
}

// Enabled reports whether the app starts at login.
func (a *Autostart) Enabled() (bool, error) { return a.entry().IsEnabled(), nil }

// Enable makes the app start at login.
func (a *Autostart) Enable() error {
	if err := a.entry().Enable(); err != nil {
		return fmt.Errorf("enable start at login: %w", err)
	}
	return nil
}

// Disable stops the app from starting at login. Disabling twice is harmless.
func (a *Autostart) Disable() error {
	if err := a.entry().Disable(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("disable start at login: %w", err)
	}
	return nil
}
