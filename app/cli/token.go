package cli

import (
	"fmt"
	"io"
)

// tokenCmd is `crosschat-relay token`: it prints the admin token.
func tokenCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("token", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	tok, err := c.cfg.AdminToken(false)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]string{"token": tok})
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
