package cli

import (
	"flag"
	"fmt"
	"io"
)

// versionCmd is `crosschat-relay version` (also --version, -v): the
// version, or with --json {"version": …}, keyed as `token --json` and
// `status --json` key theirs.
func versionCmd(args []string, version string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *asJSON {
		return (&command{stdout: stdout}).printJSON(map[string]string{"version": version})
	}
	fmt.Fprintln(stdout, "crosschat-relay", version)
	return nil
}
