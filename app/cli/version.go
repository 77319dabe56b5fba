package cli

import (
	"fmt"
	"io"
)

// versionCmd is `crosschat-relay version` (also --version, -v).
func versionCmd(args []string, version string, stdout io.Writer) error {
	if len(args) > 0 && isHelpFlag(args[0]) {
		return &helpError{name: "version"}
	}
	if len(args) > 0 {
		return fmt.Errorf("%w: version takes no arguments, got %q", errUsage, args[0])
	}
	fmt.Fprintln(stdout, "crosschat-relay", version)
	return nil
}
