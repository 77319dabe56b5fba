package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// importCmd is `import-upstream [--from PATH]`: the upstream relay's
// relay.db (by default the one in the data folder) becomes this relay's.
func importCmd(args []string, stdout, stderr io.Writer) error {
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
	res, err := importUpstream(from, c.cfg.DatabasePath(), c.cfg.OperatorSlug)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(res)
	}
	printImport(stdout, res)
	return nil
}

// importUpstream imports with the harnesses this build knows.
func importUpstream(from, to, operator string) (store.ImportResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if operator == "" {
		operator = relay.DefaultOperatorSlug
	}
	return store.ImportUpstream(ctx, from, to, store.ImportOptions{
		Store: store.Options{OperatorSlug: operator},
		KnownHarness: func(id string) bool {
			if id == relay.HarnessCustom {
				return true
			}
			_, ok := harness.Lookup(id)
			return ok
		},
	})
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
	for _, s := range res.SkippedWorkers {
		fmt.Fprintf(w, "  Worker not imported (harness unknown here): %s\n", termSafe(s))
	}
	if len(res.Workers) > 0 {
		fmt.Fprint(w, importedWorkersText(res.Workers))
	}
	fmt.Fprintln(w, "Agents keep their tokens. Start the relay as usual.")
}

// importedWorkersText lists the workers an import brought in, each
// disabled, with what it would run, and says how to enable them. The values
// come from the imported file, so they are made safe for a terminal.
func importedWorkersText(workers []store.ImportedWorker) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %d imported worker(s), each DISABLED until you enable it (Workers page) after checking what it runs:\n", len(workers))
	for _, iw := range workers {
		command := iw.Command
		if command == "" {
			command = "(the preset's own program, found when enabled)"
		}
		args := make([]string, len(iw.Args))
		for i, a := range iw.Args {
			args[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "    %s\n      harness:   %s\n      command:   %s\n      arguments: %s\n      folder:    %s\n",
			termSafe(iw.AgentSlug), termSafe(iw.Harness), termSafe(command), termSafe(strings.Join(args, " ")), termSafe(iw.Workdir))
		if len(iw.ExtraDirs) > 0 {
			fmt.Fprintf(&b, "      also:      %s\n", termSafe(strings.Join(iw.ExtraDirs, "; ")))
		}
		if len(iw.AllowedSenders) > 0 {
			fmt.Fprintf(&b, "      tasks from: %s\n", termSafe(strings.Join(iw.AllowedSenders, ", ")))
		}
	}
	return b.String()
}
