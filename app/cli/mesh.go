package cli

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// meshCmd runs `crosschat-relay mesh status|agents|relays|names|invite|nats-config
// [--json]`, `mesh trust NAME|ID [--fingerprint SHA256:…]` / `mesh block
// NAME|ID` and `mesh name SLUG --relay NAME|ID`.
func meshCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("mesh", args, "status", "agents", "relays", "trust", "block", "invite", "names", "name", "nats-config")
	if err != nil {
		return err
	}
	fingerprint, holder := "", ""
	var flags func(fs *flag.FlagSet)
	switch action {
	case "trust":
		flags = func(fs *flag.FlagSet) {
			fs.StringVar(&fingerprint, "fingerprint", "", "the key fingerprint (SHA256:…) its operator confirmed; without it, the relay's only key is pinned.\n"+
				"Also how a key change is settled: the pinned key's fingerprint keeps it, the new one's takes it")
		}
	case "name":
		flags = func(fs *flag.FlagSet) {
			fs.StringVar(&holder, "relay", "", "the relay (name or id) whose agent SLUG takes the plain name SLUG here; the agent that had it\n"+
				"is named SLUG@ITS-RELAY from then on, in every task, update and worker's allowed senders")
		}
	}
	c, err := parseCommand("mesh "+action, rest, stdout, stderr, flags)
	if err != nil {
		return err
	}
	switch action {
	case "relays":
		return meshRelays(c)
	case "invite":
		return meshInvite(c)
	case "nats-config":
		return meshNATSConfig(c)
	case "names":
		return meshNames(c)
	case "name":
		target := ""
		if len(c.args) > 0 {
			target = c.args[0]
		}
		if target == "" || holder == "" {
			return fmt.Errorf("%w: mesh name needs a slug and --relay NAME|ID (crosschat-relay mesh names lists the names)", errUsage)
		}
		return meshGiveName(c, target, holder)
	case "trust", "block":
		target := ""
		if len(c.args) > 0 {
			target = c.args[0]
		}
		if target == "" {
			return fmt.Errorf("%w: mesh %s needs a relay's name or id (crosschat-relay mesh relays lists them)", errUsage, action)
		}
		var r mesh.RelayInfo
		method, args := "Trust", []any{target, fingerprint}
		if action == "block" {
			method, args = "Block", []any{target}
		}
		if done, err := c.fetch("Mesh", method, &r, args...); done || err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Relay %s (%s) is %s; key %s.\n", termSafe(r.Name), termSafe(r.ID), r.State, termSafe(r.Fingerprint))
		return nil
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
	var st app.MeshStatus
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
		fmt.Fprintf(stdout, "Slugs of this relay's agents another relay also shows (they keep them): %s\n", termSafe(strings.Join(st.Conflicts, ", ")))
	}
	fmt.Fprintf(stdout, "Trust: %s", st.Trust)
	if st.EmbedAuth != "" {
		fmt.Fprintf(stdout, "; embedded server: %s", st.EmbedAuth)
	}
	fmt.Fprintln(stdout)
	if len(st.Credential.Can) > 0 {
		fmt.Fprintf(stdout, "Warning: this relay's NATS credential can %s: give each relay its own user (crosschat-relay mesh nats-config); --nats-strict refuses such a credential\n",
			strings.Join(st.Credential.Can, ", "))
	}
	if st.StreamWarning != "" {
		fmt.Fprintf(stdout, "Warning: %s\n", termSafe(st.StreamWarning))
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(stdout, "Warning: %s\n", termSafe(w))
	}
	for _, k := range st.KeyChanges {
		fmt.Fprintf(stdout, "Key change: relay %s (%s) is pinned to %s and now shows %s; what it sends is held until you confirm one (mesh trust %s --fingerprint …)\n",
			termSafe(k.Relay), termSafe(k.RelayID), termSafe(k.Pinned), termSafe(k.Shown), termSafe(k.RelayID))
	}
	for _, d := range st.DirectoryConflicts {
		fmt.Fprintf(stdout, "Directory conflict: %s\n", termSafe(d))
	}
	if len(st.Refused) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(st.Refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, st.Refused[k]))
		}
		fmt.Fprintf(stdout, "Refused envelopes: %s\n", termSafe(strings.Join(parts, ", ")))
	}
	if len(st.Held) > 0 {
		by := map[string]int{}
		for _, h := range st.Held {
			by[h.Reason]++
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(by)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
		}
		fmt.Fprintf(stdout, "Held: %d changes (%s; crosschat-relay mesh relays; trust a relay to deliver its tasks)\n", len(st.Held), strings.Join(parts, ", "))
	}
	return c.table("RELAY\tID\tSTATE\tTRUST\tLAST SEEN\tAGENTS\tOUTBOX\tADDRESS", func(tw io.Writer) {
		for _, r := range st.Relays {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", termSafe(relayLabel(r.Name, r.Self)), termSafe(r.ID), onlineWord(r.Online), r.State, termSafe(r.LastSeen), r.Agents, r.Outbox, termSafe(r.Address))
		}
	})
}

// meshRelays prints every relay seen with its admission state and key
// fingerprint, then the envelopes held.
func meshRelays(c *command) error {
	var st app.MeshStatus
	if err := c.call("Mesh", "Status", &st); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(st.Relays)
	}
	if !st.Enabled {
		fmt.Fprintln(c.stdout, "This relay is not in a mesh (start it with --nats URL or --nats-embed HOST:PORT).")
		return nil
	}
	if err := c.table("RELAY\tID\tSTATE\tFINGERPRINT", func(tw io.Writer) {
		for _, r := range st.Relays {
			fp := r.Fingerprint
			if r.NewFingerprint != "" {
				fp += " (now shows " + r.NewFingerprint + ": trust it again only if its operator confirms)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termSafe(relayLabel(r.Name, r.Self)), termSafe(r.ID), r.State, termSafe(fp))
		}
	}); err != nil {
		return err
	}
	for _, r := range st.Relays {
		if r.PreviousName != "" {
			fmt.Fprintf(c.stdout, "Relay %s was trusted as %q and now calls itself %q: it is pending until you trust it again.\n",
				termSafe(r.ID), termSafe(r.PreviousName), termSafe(r.Name))
		}
		if r.NameIssue != "" {
			fmt.Fprintf(c.stdout, "Relay %s (%q): %s.\n", termSafe(r.ID), termSafe(r.Name), termSafe(r.NameIssue))
		}
	}
	if len(st.Held) == 0 {
		return nil
	}
	fmt.Fprintln(c.stdout)
	return c.table("HELD FROM\tREASON\tTASK\tFROM\tTO\tTITLE", func(tw io.Writer) {
		for _, h := range st.Held {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(h.Relay), termSafe(h.Reason), termSafe(h.TaskID), termSafe(h.Sender), termSafe(h.Recipient), termSafe(h.Title))
		}
	})
}

// meshNames prints the name every agent of another relay has here, then
// the slugs more than one holder shows.
func meshNames(c *command) error {
	var names []mesh.NameHolder
	if err := c.call("Mesh", "Names", &names); err != nil {
		return err
	}
	var contests []mesh.NameContest
	if err := c.call("Mesh", "Contests", &contests); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(struct {
			Names    []mesh.NameHolder  `json:"names"`
			Contests []mesh.NameContest `json:"contests"`
		}{names, contests})
	}
	if err := c.table("NAME\tRELAY\tRELAY ID\tSLUG THERE", func(tw io.Writer) {
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termSafe(n.Name), termSafe(n.Relay), termSafe(n.RelayID), termSafe(n.Slug))
		}
	}); err != nil {
		return err
	}
	for _, ct := range contests {
		var others []string
		for _, o := range ct.Others {
			others = append(others, fmt.Sprintf("%s (%s)", o.Name, o.Relay))
		}
		fmt.Fprintf(c.stdout, "Contested: %s is %s's here; also shown by %s. To give it to another: crosschat-relay mesh name %s --relay NAME|ID\n",
			termSafe(ct.Slug), termSafe(ct.Holder), termSafe(strings.Join(others, ", ")), termSafe(ct.Slug))
	}
	return nil
}

// meshGiveName gives the plain name slug to relay holder's agent slug.
func meshGiveName(c *command, slug, holder string) error {
	var changes []relay.NameChange
	if done, err := c.fetch("Mesh", "GiveName", &changes, slug, holder); done || err != nil {
		return err
	}
	if len(changes) == 0 {
		fmt.Fprintf(c.stdout, "%s is already relay %s's here.\n", termSafe(slug), termSafe(holder))
		return nil
	}
	for _, ch := range changes {
		fmt.Fprintf(c.stdout, "Renamed %s to %s (its tasks, updates and workers' allowed senders too).\n", termSafe(ch.From), termSafe(ch.To))
	}
	return nil
}

// meshInvite prints the command another computer runs to join this mesh.
func meshInvite(c *command) error {
	var inv mesh.Invite
	if done, err := c.fetch("Mesh", "Invite", &inv); done || err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "On the other computer, run:")
	fmt.Fprintln(c.stdout)
	fmt.Fprintln(c.stdout, "  "+inv.Command)
	fmt.Fprintln(c.stdout)
	fmt.Fprintln(c.stdout, "or set "+inv.Env+" for its relay (keeps the invite out of the process list).")
	if inv.ExpiresAt != "" {
		fmt.Fprintf(c.stdout, "The invite lets one relay in, once, until %s.\n", inv.ExpiresAt)
	}
	for flag, f := range inv.Files {
		fmt.Fprintf(c.stdout, "Copy %s to the other computer and give its path to %s.\n", f, flag)
	}
	if inv.Note != "" {
		fmt.Fprintln(c.stdout, inv.Note)
	}
	return nil
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
