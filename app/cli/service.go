package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/desktop"
)

// serviceCmd is `service install|uninstall|status`: the headless relay
// (`serve`, with this command's --host, --port and --data-dir) run by the
// system's service manager, restarted when it fails.
func serviceCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("service", args, "install", "uninstall", "status")
	if err != nil {
		return err
	}
	var system, writeOnly bool
	var account string
	c, err := parseCommand("service "+action, rest, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&system, "system", false, "a system-wide service (systemd system unit, launchd daemon, task at boot) instead of the user's")
		fs.StringVar(&account, "user", "", "the account a --system service runs as (Linux, macOS; never root on macOS); default $SUDO_USER or the current user")
		fs.BoolVar(&writeOnly, "write-only", false, "only write or remove the service file; do not call systemctl/launchctl/schtasks")
	})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("service: find this program: %w", err)
	}
	dataDir := c.cfg.DataDir
	if system {
		current := ""
		if u, err := user.Current(); err == nil {
			current = u.Username
		}
		account, err = systemServiceAccount(runtime.GOOS, action, account, os.Getenv("SUDO_USER"), current)
		if err != nil {
			return err
		}
		if runtime.GOOS == "darwin" && account != current && !dataDirChosen(c.fs) {
			// The default data folder is the account's, not the one of
			// whoever runs the command (root, under sudo).
			if u, err := user.Lookup(account); err == nil {
				dataDir = filepath.Join(u.HomeDir, "Library", "Application Support", "crosschat-relay")
			}
		}
	}
	svc := desktop.Service{
		Exec:   []string{exe, "serve", "--host", c.cfg.Host, "--port", strconv.Itoa(c.cfg.Port), "--data-dir", dataDir},
		System: system,
		User:   account,
	}
	var ran []string
	switch action {
	case "install":
		ran, err = svc.Install(writeOnly)
	case "uninstall":
		ran, err = svc.Uninstall(writeOnly)
	}
	if err != nil {
		return err
	}
	installed, err := svc.Installed()
	if err != nil {
		return err
	}
	state := ""
	if installed && !writeOnly {
		state = svc.ManagerState()
	}
	if c.json {
		return c.printJSON(map[string]any{"installed": installed, "path": svc.Path(), "state": state, "ran": ran, "command": svc.Exec})
	}
	for _, r := range ran {
		fmt.Fprintln(stdout, "ran:", r)
	}
	where := svc.Path()
	if where == "" {
		where = "the task scheduler"
	}
	if installed {
		fmt.Fprintf(stdout, "The relay service is installed (%s).\n", where)
		if state != "" {
			fmt.Fprintf(stdout, "State: %s\n", state)
		}
	} else {
		fmt.Fprintf(stdout, "The relay service is not installed (%s).\n", where)
	}
	return nil
}

// systemServiceAccount is the account a --system service runs as: --user,
// else $SUDO_USER, else the current user. A system service would otherwise
// run the relay, and every agent CLI its workers start, with the machine's
// highest rights: on Windows (a task at boot runs as SYSTEM unless it stores
// a user's password) installing one is refused; on macOS the launchd daemon
// runs as the named user, and root is refused. Removing or querying an
// existing one is always allowed.
func systemServiceAccount(goos, action, account, sudoUser, current string) (string, error) {
	if account == "" {
		account = sudoUser
	}
	if account == "" {
		account = current
	}
	if action != "install" {
		return account, nil
	}
	switch goos {
	case "windows":
		return "", errors.New("service install --system is refused on Windows: the task would run the relay, and the agent CLIs its workers start, as SYSTEM. " +
			"Run `crosschat-relay service install` (without --system) as the user the relay should run as: it starts at that user's logon")
	case "darwin":
		if account == "" || account == "root" {
			return "", errors.New("service install --system on macOS runs the relay, and the agent CLIs its workers start, as a named user, never root: " +
				"give --user NAME (or run it with sudo from that user's account)")
		}
	}
	return account, nil
}

// dataDirChosen reports whether the data folder was named (--data-dir or
// the environment) rather than defaulted.
func dataDirChosen(fs *flag.FlagSet) bool {
	chosen := os.Getenv(config.EnvDataDir) != ""
	fs.Visit(func(f *flag.Flag) { chosen = chosen || f.Name == "data-dir" })
	return chosen
}
