package cli

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// projectRow is one line of `projects list`.
type projectRow struct {
	ID  string `json:"id"`
	Dir string `json:"dir"`
	// FolderMissing is set when the folder is gone from the disk.
	FolderMissing bool   `json:"folderMissing,omitempty"`
	Relay         string `json:"relay"`
	// State is online or offline as the relay sees the project's agent,
	// "not on the relay" when it has none, "unknown" when the relay did
	// not answer, "on the relay at URL" for a project of another relay.
	State    string `json:"state"`
	LastSeen string `json:"lastSeen,omitempty"`
}

// projectsCmd is `crosschat-relay projects list|remove`.
func projectsCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("projects", args, "list", "remove")
	if err != nil {
		return err
	}
	c, err := parseCommand("projects "+action, rest, stdout, stderr, nil)
	if err != nil {
		return err
	}
	store, err := projectStore()
	if err != nil {
		return err
	}
	sayWaiting(store, c.stderr)
	if action == "remove" {
		if len(c.args) == 0 {
			return fmt.Errorf("%w: projects remove needs the project's id (crosschat-relay projects list shows them)", errUsage)
		}
		return projectsRemove(c, store, c.args[0])
	}
	ps, err := store.List()
	if err != nil {
		return err
	}
	var agents []relay.Agent
	relayErr := c.call("Agents", "List", &agents)
	base := localRelayURL(c)
	rows := make([]projectRow, 0, len(ps))
	for _, p := range ps {
		row := projectRow{ID: p.ID, Dir: p.Dir, Relay: p.Relay, State: "unknown"}
		if st, err := os.Stat(p.Dir); err != nil || !st.IsDir() {
			row.FolderMissing = true
		}
		switch {
		case p.Relay != base:
			// Registered on another relay: this one knows nothing of it.
			row.State = "on the relay at " + p.Relay
		case relayErr == nil:
			row.State = "not on the relay"
			if i := slices.IndexFunc(agents, func(a relay.Agent) bool { return a.Slug == p.ID }); i >= 0 {
				row.State, row.LastSeen = agents[i].Availability, agents[i].LastSeenAt
			}
		}
		rows = append(rows, row)
	}
	if c.json {
		return c.printJSON(rows)
	}
	if relayErr != nil {
		fmt.Fprintf(c.stderr, "crosschat-relay: no presence shown: %s\n", errorText(relayErr))
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "No project is registered on this computer (crosschat-relay register makes a folder one).")
		return nil
	}
	return c.table("ID\tFOLDER\tSTATE\tLAST SEEN", func(tw io.Writer) {
		for _, r := range rows {
			dir := r.Dir
			if r.FolderMissing {
				dir += " (missing)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termSafe(r.ID), termSafe(dir), termSafe(r.State), termSafe(r.LastSeen))
		}
	})
}

// projectsRemove forgets the project id: its agent on the relay retired
// (token revoked, out of the lists, its name kept, its open tasks blocked
// and their senders told), then its
// entry and cursor on this computer. A project of another relay than the
// one c names is refused: its agent is retired where it lives.
func projectsRemove(c *command, store *project.Store, raw string) error {
	if err := project.CheckGiven(raw); err != nil {
		return fmt.Errorf("%w: project id %q refused: %v", errUsage, raw, err)
	}
	id := project.Normalize(raw)
	p, ok, err := store.Get(id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no project %q is registered on this computer (crosschat-relay projects list shows those that are)", raw)
	}
	if base := localRelayURL(c); p.Relay != base {
		// The relay the flags name may have an agent of that name too:
		// someone else's, not this project's.
		return fmt.Errorf("the project %q is registered on the relay at %s, not on the one at %s: remove it with that relay's --port and --data-dir (or CROSSCHAT_PORT and CROSSCHAT_DATA_DIR)", p.ID, p.Relay, base)
	}
	note := "its agent is retired (token revoked, name kept), its tasks are kept"
	if err := c.call("Agents", "Retire", nil, p.ID); relay.ErrorCode(err) == relay.EUnknownAgent {
		note = "the relay had no agent of that name any more"
	} else if err != nil {
		return fmt.Errorf("retire the project's agent %q: %w", p.ID, err)
	}
	err = store.Update(func(ps []project.Project) ([]project.Project, bool, error) {
		return slices.DeleteFunc(ps, func(x project.Project) bool { return x.ID == p.ID }), true, nil
	})
	if err != nil {
		return err
	}
	removeProjectCursors(p.ID)
	if c.json {
		return c.printJSON(map[string]any{"removed": p.ID, "dir": p.Dir})
	}
	fmt.Fprintf(c.stdout, "The project %q (%s) is removed: %s. Registering the folder again brings it back.\n", termSafe(p.ID), termSafe(p.Dir), note)
	return nil
}
