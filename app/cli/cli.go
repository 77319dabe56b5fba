package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Usage is the top-level help.
const Usage = `Crosschat Relay: a durable task inbox for AI agents, served over MCP.

Usage:
  crosschat-relay [--hidden] [serve flags]   open the desktop app (the relay runs inside it)
  crosschat-relay serve [flags]              run the relay without a window
  crosschat-relay agents add <slug> --name N --model M --capability C...
  crosschat-relay agents list
  crosschat-relay invites create [--uses N] [--expires 1h|24h|168h] [--name N] [--role R]
                                 [--first-task-title T --first-task-instructions I]
  crosschat-relay tasks list [--status S] [--agent A] [--query Q] [--limit N]
  crosschat-relay workers list|remove <slug>|pause|resume
  crosschat-relay workers set <slug> --harness ID --workdir DIR [--extra-dir D]... [--command PATH]
                 [--arg A]... [--prompt stdin|file|argument] [--allow-sender S]... [--timeout 30m]
                 [--runs-per-hour 20] [--exclusive=true] [--env NAME]...
                 [--sandbox on|off] [--allow-path PATH[:rw]]... [--allow-unsandboxed] [--allow-hook-edits]
  crosschat-relay harnesses                  the agent CLIs found on this computer
  crosschat-relay token                      print the admin token
  crosschat-relay quit                       stop the running relay (window app or serve)
  crosschat-relay open                       open the dashboard in a browser
  crosschat-relay autostart enable|disable|status
                                             start the app (hidden) when you log in
  crosschat-relay status                     is the relay running: pid, version, uptime, address, counts
                                             (exit code 0 running, 3 not running)
  crosschat-relay logs [-f] [-n N]           the log file in the data folder (-f follows it)
  crosschat-relay service install|uninstall|status [--system] [--write-only]
                                             run "serve" as a service: systemd unit (Linux),
                                             launchd agent (macOS), scheduled task (Windows)
  crosschat-relay import-upstream [--from PATH]
                                             import the upstream Crosschat Relay's relay.db
  crosschat-relay bench [flags]              measure a relay with MCP load over HTTP
  crosschat-relay mesh status|agents|relays|invite
                                             the mesh over NATS: relays, link, outbox, lag; every agent;
                                             relays with trust state and key; the command to join
  crosschat-relay mesh trust|block NAME|ID   admit (--fingerprint SHA256:… pins exactly that key) or refuse a relay
  crosschat-relay register [DIR] [--id ID]   make a project folder an address (its agent and token, kept for you)
  crosschat-relay send ID MESSAGE [--title T] [--priority P]
                                             a task from this folder's project to ID (MESSAGE - reads stdin)
  crosschat-relay monitor [--format task|message]
                                             one line per task or update for the agent (live sessions; the
                                             token from CROSSCHAT_TOKEN or the folder's registered project)
  crosschat-relay channel                    stdio MCP server for Claude Code: relay tools + channel events
  crosschat-relay claude-plugin [--dir DIR] [--print]
                                             install the Claude Code plugin (every project folder an address)
  crosschat-relay sessions list|show <id or exact name> [--tool claude-code|codex]
                                             Claude Code sessions and Codex threads on this computer
  crosschat-relay version

The agents, invites, tasks, workers, harnesses and mesh verbs talk to the running relay, found with
--host/--port (CROSSCHAT_HOST/CROSSCHAT_PORT) and authenticated with the admin
token from CROSSCHAT_API_TOKEN or the api-token file in --data-dir. Each takes
--json for machine-readable output. Run a verb with --help for its flags.
No verb reads a .env file. The admin token is sent only after the relay has
proved it holds it, and over plain HTTP only to this computer.
`

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// command is one CLI verb's context: parsed location flags, output mode,
// and the writers.
type command struct {
	cfg    config.Config
	json   bool
	stdout io.Writer
	stderr io.Writer
	fs     *flag.FlagSet
}

func newCommand(name string, stdout, stderr io.Writer) (*command, error) {
	env, err := app.Env()
	if err != nil {
		return nil, err
	}
	c := &command{stdout: stdout, stderr: stderr}
	c.fs = c.cfg.NewFlagSet(name, env, false, stderr)
	c.fs.BoolVar(&c.json, "json", false, "print JSON")
	return c, nil
}

// parseCommand makes a verb's command, lets flags add the verb's own flags
// (nil: none) and parses args.
func parseCommand(name string, args []string, stdout, stderr io.Writer, flags func(fs *flag.FlagSet)) (*command, error) {
	c, err := newCommand(name, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if flags != nil {
		flags(c.fs)
	}
	if err := c.parse(args); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *command) parse(args []string) error {
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	return nil
}

func (c *command) client() (*client.Client, error) {
	token, err := c.cfg.AdminToken(false)
	if err != nil {
		return nil, err
	}
	host := c.cfg.Host
	if host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	cfg := c.cfg
	cfg.Host = host
	return client.New("http://"+cfg.Addr(), token), nil
}

func (c *command) call(service, method string, out any, args ...any) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cl.Call(ctx, service, method, out, args...)
}

// fetch calls a bridge method into out and, with --json, prints out; done
// says the verb has nothing left to print.
func (c *command) fetch(service, method string, out any, args ...any) (done bool, err error) {
	if err := c.call(service, method, out, args...); err != nil {
		return true, err
	}
	if c.json {
		return true, c.printJSON(out)
	}
	return false, nil
}

// table prints a column-aligned table: the tab-separated header, then the
// lines rows writes to w.
func (c *command) table(header string, rows func(w io.Writer)) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	return tw.Flush()
}

func (c *command) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// report prints a yes-or-no outcome: {key: on} with --json, else the line
// yes or no.
func (c *command) report(key string, on bool, yes, no string) error {
	if c.json {
		return c.printJSON(map[string]bool{key: on})
	}
	if on {
		fmt.Fprintln(c.stdout, yes)
	} else {
		fmt.Fprintln(c.stdout, no)
	}
	return nil
}

// verbAction splits the arguments of a verb with actions (`service
// install|uninstall|status`) into the action and what follows it; a missing
// or unknown action is a usage error that names the actions.
func verbAction(verb string, args []string, actions ...string) (string, []string, error) {
	if len(args) > 0 && slices.Contains(actions, args[0]) {
		return args[0], args[1:], nil
	}
	last := len(actions) - 1
	err := fmt.Errorf("%w: %s needs %s or %s", errUsage, verb, strings.Join(actions[:last], ", "), actions[last])
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		err = fmt.Errorf("%w, not %q", err, args[0])
	}
	return "", nil, err
}

// Command runs a CLI verb and returns the process exit code.
func Command(args []string, version string, stdout, stderr io.Writer) int {
	err := runCommand(args, version, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(exitCode)):
		var ec exitCode
		errors.As(err, &ec)
		return int(ec)
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "crosschat-relay:", termSafeText(err.Error()))
		fmt.Fprint(stderr, "\n"+Usage)
		return 2
	default:
		var re *relay.Error
		if errors.As(err, &re) {
			fmt.Fprintf(stderr, "crosschat-relay: %s (%s)\n", termSafeText(re.Message), termSafe(re.Code))
		} else {
			fmt.Fprintln(stderr, "crosschat-relay:", termSafeText(err.Error()))
		}
		return 1
	}
}

var errUsage = errors.New("usage")

func runCommand(args []string, version string, stdout, stderr io.Writer) error {
	verb := strings.Join(args[:min(2, len(args))], " ")
	switch {
	case args[0] == "version" || args[0] == "--version" || args[0] == "-v":
		fmt.Fprintln(stdout, "crosschat-relay", version)
		return nil
	case args[0] == "help" || args[0] == "--help" || args[0] == "-h":
		fmt.Fprint(stdout, Usage)
		return nil
	case args[0] == "token":
		return tokenCmd(args[1:], stdout, stderr)
	case args[0] == "autostart":
		return autostartCmd(args[1:], stdout, stderr)
	case args[0] == "open":
		return openCmd(args[1:], stdout, stderr)
	case args[0] == "workers":
		return workersCmd(args[1:], stdout, stderr)
	case args[0] == "harnesses":
		return harnessesCmd(args[1:], stdout, stderr)
	case args[0] == "quit":
		return quitCmd(args[1:], stdout, stderr)
	case args[0] == "status":
		return statusCmd(args[1:], stdout, stderr)
	case args[0] == "logs":
		return logsCmd(args[1:], stdout, stderr)
	case args[0] == "service":
		return serviceCmd(args[1:], stdout, stderr)
	case args[0] == "import-upstream":
		return importCmd(args[1:], stdout, stderr)
	case args[0] == "bench":
		return benchCmd(args[1:], version, stdout, stderr)
	case args[0] == "mesh":
		return meshCmd(args[1:], stdout, stderr)
	case args[0] == "monitor":
		return monitorCmd(args[1:], stdout, stderr)
	case args[0] == "register":
		return registerCmd(args[1:], stdout, stderr)
	case args[0] == "send":
		return sendCmd(args[1:], os.Stdin, stdout, stderr)
	case args[0] == "sessions":
		return sessionsCmd(args[1:], stdout, stderr)
	case args[0] == "channel":
		return channelCmd(args[1:], version, os.Stdin, stdout, stderr)
	case args[0] == "claude-plugin":
		return claudePluginCmd(args[1:], stdout, stderr)
	case verb == "agents add":
		return agentsAdd(args[2:], stdout, stderr)
	case verb == "agents list":
		return agentsList(args[2:], stdout, stderr)
	case verb == "invites create":
		return invitesCreate(args[2:], stdout, stderr)
	case verb == "tasks list":
		return tasksList(args[2:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, verb)
}

func tokenCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("token", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	tok, err := c.cfg.AdminToken(false)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]string{"token": tok})
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func agentsAdd(args []string, stdout, stderr io.Writer) error {
	c, err := newCommand("agents add", stdout, stderr)
	if err != nil {
		return err
	}
	var in relay.CreateAgentInput
	var caps stringList
	c.fs.StringVar(&in.DisplayName, "name", "", "display name (required)")
	c.fs.StringVar(&in.ModelSlug, "model", "", "model it runs on (required)")
	c.fs.Var(&caps, "capability", "capability label, repeatable (required at least once)")
	c.fs.StringVar(&in.Details, "role", "", "what the agent does")
	// The slug comes first: agents add <slug> --name ...
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := c.parse(args); err != nil {
			return err
		}
		return fmt.Errorf("%w: agents add needs a slug: crosschat-relay agents add <slug> --name N --model M --capability C", errUsage)
	}
	in.Slug = args[0]
	if err := c.parse(args[1:]); err != nil {
		return err
	}
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

func invitesCreate(args []string, stdout, stderr io.Writer) error {
	var in relay.InviteInput
	var expires time.Duration
	var ft relay.FirstTask
	c, err := parseCommand("invites create", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&in.MaxUses, "uses", 1, "how many agents may enroll with it; 0 for unlimited")
		fs.DurationVar(&expires, "expires", 24*time.Hour, "how long it is valid: 1h, 24h, 168h (at most 720h)")
		fs.StringVar(&in.DisplayName, "name", "", "display name given to the agent that enrolls (locked)")
		fs.StringVar(&in.Role, "role", "", "role given to the agent that enrolls (locked)")
		fs.StringVar(&in.Label, "label", "", "a note for yourself")
		fs.StringVar(&ft.Title, "first-task-title", "", "title of a task queued for each agent that enrolls")
		fs.StringVar(&ft.Instructions, "first-task-instructions", "", "instructions of that first task")
		fs.IntVar(&ft.Priority, "first-task-priority", 2, "priority of the first task: 1 low, 2 normal, 3 urgent")
	})
	if err != nil {
		return err
	}
	in.ExpiresInHours = expires.Hours()
	if ft.Title != "" || ft.Instructions != "" {
		in.FirstTask = &ft
	}
	var out app.InviteCreated
	if done, err := c.fetch("Invites", "Create", &out, in); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Invite code: %s\n\nPaste this message into the agent's chat:\n\n%s", termSafe(out.Code), termSafeText(out.Message))
	return nil
}

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

func quitCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("quit", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	if err := c.call("System", "Quit", nil); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]bool{"stopping": true})
	}
	fmt.Fprintln(stdout, "The relay is stopping.")
	return nil
}

func autostartCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("autostart", args, "enable", "disable", "status")
	if err != nil {
		return err
	}
	c, err := parseCommand("autostart "+action, rest, stdout, stderr, nil)
	if err != nil {
		return err
	}
	// The location flags given here are repeated at login.
	var flags []string
	c.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "port", "host":
			flags = append(flags, "--"+f.Name+"="+f.Value.String())
		case "data-dir":
			if abs, err := filepath.Abs(f.Value.String()); err == nil {
				flags = append(flags, "--data-dir="+abs)
			}
		}
	})
	a := app.AutostartWith(flags)
	switch action {
	case "enable":
		err = a.Enable()
	case "disable":
		err = a.Disable()
	}
	if err != nil {
		return err
	}
	on, err := a.Enabled()
	if err != nil {
		return err
	}
	return c.report("enabled", on, "Crosschat Relay starts (hidden) when you log in.", "Crosschat Relay does not start when you log in.")
}

func openCmd(args []string, stdout, stderr io.Writer) error {
	c, err := parseCommand("open", args, stdout, stderr, nil)
	if err != nil {
		return err
	}
	url := c.cfg.BaseURL() + "/"
	if err := desktop.Open(url); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Opened", url)
	return nil
}
