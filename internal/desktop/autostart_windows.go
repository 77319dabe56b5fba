//go:build windows

package desktop

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/windows/registry"
)

const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`

func (a *Autostart) command() string {
	parts := make([]string, len(a.Exec))
	for i, p := range a.Exec {
		if strings.ContainsAny(p, " \t\"") {
			p = `"` + strings.ReplaceAll(p, `"`, `\"`) + `"`
		}
		parts[i] = p
	}
	return strings.Join(parts, " ")
}

// Enabled reports whether the app starts at login.
func (a *Autostart) Enabled() (bool, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if err != nil {
		return false, fmt.Errorf("open run key: %w", err)
	}
	defer k.Close()
	_, _, err = k.GetStringValue(DisplayName)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Enable makes the app start at login.
func (a *Autostart) Enable() error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("open run key: %w", err)
	}
	defer k.Close()
	if err := k.SetStringValue(DisplayName, a.command()); err != nil {
		return fmt.Errorf("enable start at login: %w", err)
	}
	return nil
}

// Disable stops the app from starting at login. Disabling twice is harmless.
func (a *Autostart) Disable() error {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("open run key: %w", err)
	}
	defer k.Close()
	if err := k.DeleteValue(DisplayName); err != nil && !errors.Is(err, registry.ErrNotExist) {
		return fmt.Errorf("disable start at login: %w", err)
	}
	return nil
}
