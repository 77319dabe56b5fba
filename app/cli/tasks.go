package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// tasksCmd is `crosschat-relay tasks list|show`.
func tasksCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("tasks", args, "list", "show")
	if err != nil {
		return err
	}
	if action == "show" {
		return tasksShow(rest, stdout, stderr)
	}
	return tasksList(rest, stdout, stderr)
}

// tasksShow is `tasks show ID`: one task, its instructions and timeline,
// and its result.
func tasksShow(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("tasks show", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	if len(c.args) != 1 {
		return fmt.Errorf("%w: tasks show needs one task id (tasks list shows them)", errUsage)
	}
	id, err := fullTaskID(c, c.args[0])
	if err != nil {
		return err
	}
	var d app.TaskDetail
	if done, err := c.fetch("Tasks", "Get", &d, id); done || err != nil {
		return asFlagError("tasks show", err, map[string]string{"id": "ID"})
	}
	// What agents wrote is shown clean (termsafe): it is not this
	// computer's to run in a terminal.
	t := d.Task
	fmt.Fprintf(stdout, "%s  %s\n", termSafe(t.ID), termSafe(t.Title))
	status := string(t.Status)
	if t.ClaimedAt != "" {
		status += fmt.Sprintf(" (claimed %s", termSafe(t.ClaimedAt))
		if t.ClaimedVia != "" {
			status += " via " + termSafe(t.ClaimedVia)
		}
		status += ")"
	}
	fmt.Fprintf(stdout, "  Status    %s\n", status)
	fmt.Fprintf(stdout, "  From, to  %s → %s\n", termSafe(t.SenderSlug), termSafe(t.RecipientSlug))
	fmt.Fprintf(stdout, "  Priority  %s\n", priorityName(t.Priority))
	fmt.Fprintf(stdout, "  Created   %s, updated %s\n", termSafe(t.CreatedAt), termSafe(t.UpdatedAt))
	if t.ConversationID != "" && t.ConversationID != t.ID {
		fmt.Fprintf(stdout, "  Part of   %s (hand-off %d)\n", termSafe(t.ConversationID), t.Hops)
	}
	fmt.Fprintf(stdout, "\nInstructions:\n%s\n", indent(termSafeText(t.Instructions)))
	if len(t.Reports) > 0 {
		fmt.Fprintln(stdout, "\nTimeline:")
	}
	for _, r := range t.Reports {
		fmt.Fprintf(stdout, "  %s  %-9s %s\n", termSafe(r.CreatedAt), termSafe(r.Kind), termSafe(r.Message))
		if r.Result != "" {
			fmt.Fprintf(stdout, "  Result:\n%s\n", indent(indent(termSafeText(r.Result))))
		}
	}
	return nil
}

// fullTaskID is the task id ref names: ref itself when it is a whole id,
// else the one task whose id holds it (8 characters or more, as `tasks list
// --query` and the dashboard's search take them: the end of an id tells
// tasks apart). No task, or several, is an error that says which.
func fullTaskID(c *command, ref string) (string, error) {
	if _, err := relay.TaskID("id", ref); err == nil {
		return ref, nil
	}
	f := relay.TaskFilter{Query: ref, Limit: relay.MaxListLimit}
	part := f.IDPart()
	if part == "" {
		return ref, nil // too short to pick a task: the relay's refusal says what an id is
	}
	var tasks []relay.TaskSummary
	if err := c.call("Tasks", "List", &tasks, f); err != nil {
		return "", err
	}
	var ids []string
	for _, t := range tasks {
		if strings.Contains(t.ID, part) {
			ids = append(ids, t.ID)
		}
	}
	switch {
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) == 0:
		return "", fmt.Errorf("no task id holds %q (crosschat-relay tasks list shows them)", termSafe(part))
	}
	shown := strings.Join(ids[:min(len(ids), 3)], ", ")
	if len(ids) > 3 {
		shown += ", …"
	}
	return "", fmt.Errorf("%d task ids hold %q (%s): give more of the id", len(ids), termSafe(part), shown)
}

// indent puts two spaces before each line of s.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// tasksList is `tasks list`, newest change first.
func tasksList(args []string, stdout, stderr io.Writer) error {
	var f relay.TaskFilter
	var statuses stringList
	c, err := parseCommand("tasks list", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(&statuses, "status", "queued, claimed, blocked, completed or cancelled; repeatable or comma-separated")
		fs.StringVar(&f.Agent, "agent", "", "only tasks this agent sent or received")
		fs.StringVar(&f.Query, "query", "", "only tasks whose title contains this, or whose id does (8 characters or more)")
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
	if err := c.call("Tasks", "List", &tasks, f); err != nil {
		return err
	}
	if len(tasks) == 0 && f.Agent != "" {
		// No task of an agent nobody has is said, not an empty table; one
		// the relay knows (a retired one's tasks are still listed) may
		// have none.
		if err := knownAgent(c, f.Agent); err != nil {
			return err
		}
	}
	if c.json {
		return c.printJSON(tasks)
	}
	return c.table("ID\tSTATUS\tPRIORITY\tFROM → TO\tTITLE\tUPDATED", func(tw io.Writer) {
		for _, t := range tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s → %s\t%s\t%s\n", termSafe(t.ID), termSafe(string(t.Status)), priorityName(t.Priority), termSafe(t.SenderSlug), termSafe(t.RecipientSlug), termSafe(t.Title), termSafe(t.UpdatedAt))
		}
	})
}

// knownAgent is nil when the relay lists an agent slug (read as its task
// filter reads it: trimmed, in lower case), asked with Agents.List, the
// admin API's list of agents (retired ones left out); else unknown_agent,
// naming the --agent flag and the similar slugs.
func knownAgent(c *command, slug string) error {
	var agents []relay.Agent
	if err := c.call("Agents", "List", &agents); err != nil {
		return fmt.Errorf("look up --agent %q: %w", slug, err)
	}
	want := strings.ToLower(strings.TrimSpace(slug))
	names := make([]string, 0, len(agents))
	for _, a := range agents {
		if a.Slug == want {
			return nil
		}
		names = append(names, a.Slug)
	}
	hint := "crosschat-relay agents list shows them"
	if sim := similarIDs(want, names); len(sim) > 0 {
		hint = "similar: " + strings.Join(sim, ", ")
	}
	// A retired agent is on no list: said, as it may be one with no tasks.
	return relay.Errorf(relay.EUnknownAgent, "No agent “%s” (--agent) is on the relay's list of agents (a retired one is not); %s.", want, hint).WithDetails(map[string]any{"slug": want})
}
