package app

import (
	"fmt"
	"io"
)

// benchCmd runs `crosschat-relay bench`.
func benchCmd(args []string, version string, stdout, stderr io.Writer) error {
	return fmt.Errorf("bench: not built yet")
}
