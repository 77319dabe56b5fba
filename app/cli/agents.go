package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// agentsCmd is `crosschat-relay agents add|list`.
func agentsCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("agents", args, "add", "list")
	if err != nil {
		return err
	}
	if action == "add" {
		return agentsAdd(rest, stdout, stderr)
	}
	return agentsList(rest, stdout, stderr)
}

// agentsAdd is `agents add`: it creates an agent and prints its token once.
func agentsAdd(args []string, stdout, stderr io.Writer) error {
	var in relay.CreateAgentInput
	var caps stringList
	c, err := parseCommand("agents add", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&in.DisplayName, "name", "", "display name (required)")
		fs.StringVar(&in.ModelSlug, "model", "", "model it runs on (required)")
		fs.Var(&caps, "capability", "capability label, repeatable (required at least once)")
		fs.StringVar(&in.Details, "role", "", "what the agent does")
	})
	if err != nil {
		return err
	}
	if len(c.args) == 0 {
		return fmt.Errorf("%w: agents add needs a slug: crosschat-relay agents add <slug> --name N --model M --capability C", errUsage)
	}
	var missing []string
	for _, m := range []struct {
		flag  string
		empty bool
	}{{"--name", strings.TrimSpace(in.DisplayName) == ""}, {"--model", strings.TrimSpace(in.ModelSlug) == ""}, {"--capability", len(caps) == 0}} {
		if m.empty {
			missing = append(missing, m.flag)
		}
	}
	if n := len(missing); n > 0 {
		names := missing[n-1]
		if n > 1 {
			names = strings.Join(missing[:n-1], ", ") + " and " + names
		}
		return fmt.Errorf("%w: agents add needs %s", errUsage, names)
	}
	in.Slug = c.args[0]
	in.Capabilities = caps
	var out app.TokenReveal
	if done, err := c.fetch("Agents", "Create", &out, in); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Agent %s (%s) created.\n\nToken (shown once): %s\n\nClaude Code:\n  %s\n\nCodex:\n  %s\n\nJSON clients:\n%s\n",
		termSafe(out.Agent.Slug), termSafe(out.Agent.DisplayName), termSafe(out.Token), out.Setup.ClaudeCode,
		strings.ReplaceAll(out.Setup.Codex, "\n", "\n  "), out.Setup.JSONSnippet())
	fmt.Fprint(stdout, "\n"+liveSetupText(out.Token, c.cfg.BaseURL()))
	return nil
}

// agentsList is `agents list`.
func agentsList(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("agents list", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	var agents []relay.Agent
	if done, err := c.fetch("Agents", "List", &agents); done || err != nil {
		return err
	}
	return c.table("SLUG\tNAME\tKIND\tMODEL\tSTATE\tTOKEN\tLAST SEEN", func(tw io.Writer) {
		for _, a := range agents {
			tok := "none"
			if a.HasToken {
				tok = "active"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(a.Slug), termSafe(a.DisplayName), termSafe(string(a.Kind)), termSafe(a.ModelSlug), termSafe(string(a.Availability)), tok, termSafe(a.LastSeenAt))
		}
	})
}
