package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/mesh"
)

// meshCmd runs `crosschat-relay mesh status|agents [--json]`.
func meshCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("mesh", args, "status", "agents")
	if err != nil {
		return err
	}
	c, err := parseCommand("mesh "+action, rest, stdout, stderr, nil)
	if err != nil {
		return err
	}
	if action == "agents" {
		var agents []mesh.AgentInfo
		if done, err := c.fetch("Mesh", "Agents", &agents); done || err != nil {
			return err
		}
		return c.table("AGENT\tRELAY\tSTATE\tMODEL\tCAPABILITIES", func(tw io.Writer) {
			for _, a := range agents {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termSafe(a.Slug), termSafe(relayLabel(a.Relay, a.Local)), onlineWord(a.Online), termSafe(a.ModelSlug), termSafe(strings.Join(a.Capabilities, ",")))
			}
		})
	}
	var st MeshStatus
	if done, err := c.fetch("Mesh", "Status", &st); done || err != nil {
		return err
	}
	if !st.Enabled {
		fmt.Fprintln(stdout, "This relay is not in a mesh (start it with --nats URL or --nats-embed HOST:PORT).")
		return nil
	}
	fmt.Fprintf(stdout, "Relay %s (%s), link %s", termSafe(st.RelayName), termSafe(st.RelayID), termSafe(st.Link))
	if st.Server != "" {
		fmt.Fprintf(stdout, " to %s", termSafe(st.Server))
	}
	fmt.Fprintf(stdout, "\nOutbox %d, consumer lag %d (+%d unacknowledged); published %d, applied %d, duplicates %d\n",
		st.Outbox, st.Lag, st.AckPending, st.Published, st.Applied, st.Duplicates)
	if !st.Ready {
		fmt.Fprintln(stdout, "Not set up yet: waiting for NATS.")
	}
	if st.LastError != "" {
		fmt.Fprintf(stdout, "Last error: %s\n", termSafe(st.LastError))
	}
	if len(st.Conflicts) > 0 {
		fmt.Fprintf(stdout, "Slugs held by another relay: %s\n", termSafe(strings.Join(st.Conflicts, ", ")))
	}
	return c.table("RELAY\tID\tSTATE\tLAST SEEN\tAGENTS\tOUTBOX\tADDRESS", func(tw io.Writer) {
		for _, r := range st.Relays {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", termSafe(relayLabel(r.Name, r.Self)), termSafe(r.ID), onlineWord(r.Online), termSafe(r.LastSeen), r.Agents, r.Outbox, termSafe(r.Address))
		}
	})
}

// onlineWord is the state word of a relay or agent in the mesh tables.
func onlineWord(online bool) string {
	if online {
		return "online"
	}
	return "offline"
}

// relayLabel is a relay's name in the mesh tables, marked when it is this
// relay.
func relayLabel(name string, self bool) string {
	if self {
		return name + " (this relay)"
	}
	return name
}
