package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// tasksCmd is `crosschat-relay tasks list`.
func tasksCmd(args []string, stdout, stderr io.Writer) error {
	_, rest, err := verbAction("tasks", args, "list")
	if err != nil {
		return err
	}
	return tasksList(rest, stdout, stderr)
}

// tasksList is `tasks list`, newest change first.
func tasksList(args []string, stdout, stderr io.Writer) error {
	var f relay.TaskFilter
	var statuses stringList
	c, err := parseCommand("tasks list", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(&statuses, "status", "queued, claimed, blocked, completed or cancelled; repeatable or comma-separated")
		fs.StringVar(&f.Agent, "agent", "", "only tasks this agent sent or received")
		fs.StringVar(&f.Query, "query", "", "only tasks whose title contains this")
		fs.IntVar(&f.Limit, "limit", 100, "at most this many (1..500)")
	})
	if err != nil {
		return err
	}
	if f.Limit < 1 || f.Limit > relay.MaxListLimit {
		return fmt.Errorf("%w: --limit %d: give 1 to %d", errUsage, f.Limit, relay.MaxListLimit)
	}
	for _, s := range statuses {
		for _, p := range strings.Split(s, ",") {
			st := relay.TaskStatus(strings.TrimSpace(p))
			if !st.Valid() {
				return fmt.Errorf("%w: --status %q: use queued, claimed, blocked, completed or cancelled", errUsage, p)
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	var tasks []relay.TaskSummary
	if done, err := c.fetch("Tasks", "List", &tasks, f); done || err != nil {
		return err
	}
	return c.table("ID\tSTATUS\tPRIO\tFROM → TO\tTITLE\tUPDATED", func(tw io.Writer) {
		for _, t := range tasks {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s → %s\t%s\t%s\n", termSafe(t.ID), termSafe(string(t.Status)), t.Priority, termSafe(t.SenderSlug), termSafe(t.RecipientSlug), termSafe(t.Title), termSafe(t.UpdatedAt))
		}
	})
}
