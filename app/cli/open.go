package cli

import (
	"fmt"
	"io"

	"github.com/crosschat/crosschat-relay/internal/desktop"
)

// openCmd is `crosschat-relay open`: the dashboard in the browser.
func openCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("open", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	url := c.cfg.BaseURL() + "/"
	if err := desktop.Open(url); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Opened", url)
	return nil
}
