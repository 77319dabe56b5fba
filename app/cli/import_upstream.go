package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// importUpstreamCmd is `import-upstream [--from PATH]`: the upstream relay's
// relay.db (by default the one in the data folder) becomes this relay's.
func importUpstreamCmd(args []string, stdout, stderr io.Writer) error {
	var from string
	c, err := parseCommand("import-upstream", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&from, "from", "", "the upstream relay.db; default relay.db in the data folder")
	})
	if err != nil {
		return err
	}
	st, err := relayStatus(c)
	if err != nil {
		return err
	}
	if st.Running {
		return errRelayRunning
	}
	if from == "" {
		from = c.cfg.DatabasePath()
	}
	res, err := app.ImportUpstream(from, c.cfg.DatabasePath(), c.cfg.OperatorSlug)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(res)
	}
	printImport(stdout, res)
	return nil
}

func printImport(w io.Writer, res store.ImportResult) {
	if res.AlreadyImported {
		fmt.Fprintf(w, "Already imported from %s; nothing changed.\n", termSafe(res.Kept))
		return
	}
	fmt.Fprintf(w, "Imported the upstream Crosschat Relay's database (schema %d).\n", res.UpstreamVersion)
	var parts []string
	for _, t := range []string{"agents", "tasks", "reports", "events", "invites", "workers", "task_activity"} {
		parts = append(parts, fmt.Sprintf("%d %s", res.Counts[t], strings.ReplaceAll(t, "_", " ")))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "  The original, unchanged: %s\n  A backup copy:          %s\n", termSafe(res.Kept), termSafe(res.Backup))
	if res.SkippedTasks > 0 {
		fmt.Fprintf(w, "  Tasks not imported (their ids are no UUIDs): %d\n", res.SkippedTasks)
	}
	for _, s := range res.SkippedWorkers {
		fmt.Fprintf(w, "  Worker not imported (harness unknown here): %s\n", termSafe(s))
	}
	fmt.Fprint(w, app.ImportedTasksText(res))
	if len(res.Workers) > 0 {
		fmt.Fprint(w, app.ImportedWorkersText(res.Workers))
	}
	fmt.Fprint(w, app.ImportedCredentialsText(res))
	fmt.Fprintln(w, "Start the relay as usual.")
}
