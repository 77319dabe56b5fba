package app

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"

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
		fs.StringVar(&account, "user", "", "the account a --system unit runs as (Linux); default $SUDO_USER or the current user")
		fs.BoolVar(&writeOnly, "write-only", false, "only write or remove the service file; do not call systemctl/launchctl/schtasks")
	})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("service: find this program: %w", err)
	}
	svc := desktop.Service{
		Exec:   []string{exe, "serve", "--host", c.cfg.Host, "--port", strconv.Itoa(c.cfg.Port), "--data-dir", c.cfg.DataDir},
		System: system,
		User:   account,
	}
	if system && svc.User == "" {
		svc.User = os.Getenv("SUDO_USER")
		if svc.User == "" {
			if u, err := user.Current(); err == nil {
				svc.User = u.Username
			}
		}
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
