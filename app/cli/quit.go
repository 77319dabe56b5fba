package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/crosschat/crosschat-relay/internal/client"
)

// quitCmd is `crosschat-relay quit`: it asks the running relay to stop.
func quitCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("quit", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	if err := c.call("System", "Quit", nil); errors.Is(err, client.ErrNotRunning) {
		// Nothing to stop: not a hint to start one.
		return fmt.Errorf("no relay is running at http://%s, so there is nothing to stop (a relay on another port is named with --port)", c.cfg.Addr())
	} else if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]bool{"stopping": true})
	}
	fmt.Fprintln(stdout, "The relay is stopping.")
	return nil
}
