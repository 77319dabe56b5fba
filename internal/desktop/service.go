package desktop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ServiceName is the systemd unit, launchd label and scheduled task name stem.
const ServiceName = "crosschat-relay"

// launchdLabel is the launchd job label on macOS.
const launchdLabel = "dev.crosschat.relay"

// Service describes the headless relay (`serve`) run by the system's
// service manager: a systemd unit on Linux (per user, or system-wide with
// System), a launchd agent (or daemon) on macOS, a scheduled task on
// Windows. Restarting on failure is the manager's job.
type Service struct {
	// Exec is the program and its arguments (exe serve --port ...).
	Exec []string
	// System installs for the whole machine instead of the current user.
	System bool
	// User runs a system-wide service as this account (a Linux system
	// unit's User=, a macOS launchd daemon's UserName).
	User string
	// GOOS selects the service manager; default runtime.GOOS.
	GOOS string
	// Home and ConfigHome locate per-user files; default the user's.
	Home, ConfigHome string
}

func (s Service) goos() string {
	if s.GOOS != "" {
		return s.GOOS
	}
	return runtime.GOOS
}

// Path is the file the service definition is written to ("" on Windows,
// where the definition lives in the task scheduler).
func (s Service) Path() string {
	home := s.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	switch s.goos() {
	case "windows":
		return ""
	case "darwin":
		if s.System {
			return "/Library/LaunchDaemons/" + launchdLabel + ".plist"
		}
		return filepath.Join(home, "Library", "LaunchAgents", launchdLabel+".plist")
	default:
		if s.System {
			return "/etc/systemd/system/" + ServiceName + ".service"
		}
		cfg := s.ConfigHome
		if cfg == "" {
			cfg = os.Getenv("XDG_CONFIG_HOME")
		}
		if cfg == "" {
			cfg = filepath.Join(home, ".config")
		}
		return filepath.Join(cfg, "systemd", "user", ServiceName+".service")
	}
}

// Definition is the text of the service file (the task's command line on Windows).
func (s Service) Definition() string {
	switch s.goos() {
	case "windows":
		return windowsCommandLine(s.Exec)
	case "darwin":
		return s.plist()
	default:
		return s.unit()
	}
}

// unit is the systemd unit.
func (s Service) unit() string {
	var b strings.Builder
	b.WriteString("# Written by `crosschat-relay service install`; remove with `crosschat-relay service uninstall`.\n")
	b.WriteString("[Unit]\nDescription=Crosschat Relay (MCP task relay for AI agents)\n")
	b.WriteString("After=network-online.target\nWants=network-online.target\n\n")
	b.WriteString("[Service]\nType=simple\n")
	quoted := make([]string, len(s.Exec))
	for i, a := range s.Exec {
		quoted[i] = systemdQuote(a)
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(quoted, " "))
	b.WriteString("Restart=on-failure\nRestartSec=5s\nUMask=0077\nNoNewPrivileges=yes\n")
	if s.System && s.User != "" {
		fmt.Fprintf(&b, "User=%s\n", s.User)
	}
	target := "default.target"
	if s.System {
		target = "multi-user.target"
	}
	fmt.Fprintf(&b, "\n[Install]\nWantedBy=%s\n", target)
	return b.String()
}

// systemdQuote quotes one ExecStart word: specifiers (%) are doubled and
// words with spaces, quotes or backslashes are double-quoted with C escapes.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// plist is the launchd property list: started at load and again whenever
// it exits unsuccessfully.
func (s Service) plist() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>` + launchdLabel + `</string>
  <key>ProgramArguments</key>
  <array>
`)
	for _, a := range s.Exec {
		fmt.Fprintf(&b, "    <string>%s</string>\n", xmlEscape(a))
	}
	b.WriteString(`  </array>
`)
	if s.System && s.User != "" {
		fmt.Fprintf(&b, "  <key>UserName</key><string>%s</string>\n", xmlEscape(s.User))
	}
	b.WriteString(`  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>ThrottleInterval</key><integer>5</integer>
</dict>
</plist>
`)
	return b.String()
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")
	b.WriteString(r.Replace(s))
	return b.String()
}

// windowsCommandLine joins argv with the quoting CommandLineToArgvW undoes.
func windowsCommandLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\"") {
			out[i] = a
			continue
		}
		var b strings.Builder
		b.WriteByte('"')
		slashes := 0
		for _, c := range a {
			switch c {
			case '\\':
				slashes++
				continue
			case '"':
				b.WriteString(strings.Repeat(`\`, slashes*2+1))
			default:
				b.WriteString(strings.Repeat(`\`, slashes))
			}
			slashes = 0
			b.WriteRune(c)
		}
		b.WriteString(strings.Repeat(`\`, slashes*2))
		b.WriteByte('"')
		out[i] = b.String()
	}
	return strings.Join(out, " ")
}

// managerCommands are the service manager calls that install (start) and
// uninstall (stop) the service once its file is written or before it is removed.
func (s Service) managerCommands(install bool) [][]string {
	switch s.goos() {
	case "windows":
		name := "Crosschat Relay"
		if install {
			c := []string{"schtasks", "/Create", "/F", "/TN", name, "/TR", windowsCommandLine(s.Exec)}
			if s.System {
				return [][]string{append(c, "/SC", "ONSTART", "/RU", "SYSTEM"), {"schtasks", "/Run", "/TN", name}}
			}
			return [][]string{append(c, "/SC", "ONLOGON"), {"schtasks", "/Run", "/TN", name}}
		}
		return [][]string{{"schtasks", "/End", "/TN", name}, {"schtasks", "/Delete", "/F", "/TN", name}}
	case "darwin":
		if install {
			return [][]string{{"launchctl", "load", "-w", s.Path()}}
		}
		return [][]string{{"launchctl", "unload", "-w", s.Path()}}
	default:
		sc := []string{"systemctl"}
		if !s.System {
			sc = append(sc, "--user")
		}
		if install {
			return [][]string{append(append([]string{}, sc...), "daemon-reload"), append(append([]string{}, sc...), "enable", "--now", ServiceName+".service")}
		}
		return [][]string{append(append([]string{}, sc...), "disable", "--now", ServiceName+".service"), append(append([]string{}, sc...), "daemon-reload")}
	}
}

// Install writes the service definition and, unless writeOnly, asks the
// service manager to enable and start it. It returns the commands it ran.
func (s Service) Install(writeOnly bool) ([]string, error) {
	if p := s.Path(); p != "" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("service install: %w", err)
		}
		if err := os.WriteFile(p, []byte(s.Definition()), 0o644); err != nil {
			return nil, fmt.Errorf("service install: %w", err)
		}
	}
	if writeOnly {
		return nil, nil
	}
	return runAll(s.managerCommands(true), false)
}

// Uninstall stops and disables the service (unless writeOnly) and removes
// its definition. Uninstalling what is not installed is harmless.
func (s Service) Uninstall(writeOnly bool) ([]string, error) {
	var ran []string
	var errs []error
	if !writeOnly {
		var err error
		ran, err = runAll(s.managerCommands(false), true)
		errs = append(errs, err)
	}
	if p := s.Path(); p != "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("service uninstall: %w", err))
		}
	}
	return ran, errors.Join(errs...)
}

// Installed reports whether the service definition exists.
func (s Service) Installed() (bool, error) {
	if s.goos() == "windows" {
		err := exec.Command("schtasks", "/Query", "/TN", "Crosschat Relay").Run()
		return err == nil, nil
	}
	_, err := os.Stat(s.Path())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// ManagerState asks the service manager about the service ("active",
// "inactive", ...); "" when it cannot say.
func (s Service) ManagerState() string {
	var cmd *exec.Cmd
	switch s.goos() {
	case "windows", "darwin":
		return ""
	default:
		args := []string{"is-active", ServiceName + ".service"}
		if !s.System {
			args = append([]string{"--user"}, args...)
		}
		cmd = exec.Command("systemctl", args...)
	}
	out, _ := cmd.Output() // is-active exits non-zero for inactive units
	return strings.TrimSpace(string(out))
}

// runAll runs each command; with keepGoing it runs the rest after a failure.
func runAll(cmds [][]string, keepGoing bool) ([]string, error) {
	var ran []string
	var errs []error
	for _, c := range cmds {
		ran = append(ran, strings.Join(c, " "))
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s", strings.Join(c, " "), err, strings.TrimSpace(string(out))))
			if !keepGoing {
				break
			}
		}
	}
	return ran, errors.Join(errs...)
}
