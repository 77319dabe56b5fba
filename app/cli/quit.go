package cli

import (
	"fmt"
	"io"
)

// quitCmd is `crosschat-relay quit`: it asks the running relay to stop.
func quitCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("quit", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	if err := c.call("System", "Quit", nil); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]bool{"stopping": true})
	}
	fmt.Fprintln(stdout, "The relay is stopping.")
	return nil
}
