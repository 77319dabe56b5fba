package cli

import (
	"cmp"
	"fmt"
	"io"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/harness"
)

// harnessesCmd runs `crosschat-relay harnesses`: the agent CLIs found here.
func harnessesCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("harnesses", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	var info app.LocalInfo
	if err := c.call("Workers", "Local", &info); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(info.Harnesses)
	}
	fmt.Fprintf(stdout, "Searched the relay's PATH (the process that runs the relay, not this terminal):\n  %s\n", termSafe(info.SearchPath))
	fmt.Fprintf(stdout, "A CLI elsewhere: crosschat-relay workers set SLUG --harness ID --command /path/to/cli, or start the relay with its folder on PATH.\n\n")
	return c.table("ID\tNAME\tFOUND\tRUNS TASKS\tVERSION\tTESTED\tPATH", func(tw io.Writer) {
		for _, h := range info.Harnesses {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\t%s\t%s\n", termSafe(h.ID), termSafe(h.Name), yesNo(h.Found), yesNo(h.CanRun), termSafe(cmp.Or(h.Version, "-")), termSafe(testedText(h)), termSafe(h.Path))
		}
	})
}

// testedText is the TESTED column: whether the version found is inside
// the range the relay's tests run ("yes (2.1.197–2.1.332)", "no, newer
// (tested 2.1.197–2.1.332)"), for a CLI not found the range alone, "-"
// when unknown.
func testedText(h app.Harness) string {
	switch h.Tested {
	case harness.VersionTested:
		return "yes (" + h.TestedRange + ")"
	case harness.VersionNewer, harness.VersionOlder:
		return "no, " + h.Tested + " (tested " + h.TestedRange + ")"
	}
	switch {
	case h.TestedRange != "" && h.Found:
		return "? (tested " + h.TestedRange + ")"
	case h.TestedRange != "":
		return "- (tested " + h.TestedRange + ")"
	}
	return "-"
}
