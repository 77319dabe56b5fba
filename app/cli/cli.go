package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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

// Usage is the top-level help: every verb, from the verb table.
func Usage() string { return topUsage() }

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// command is one CLI verb's context: parsed location flags, output mode,
// the arguments that are not flags, and the writers.
type command struct {
	cfg    config.Config
	json   bool
	stdout io.Writer
	stderr io.Writer
	fs     *flag.FlagSet
	// args are the arguments that are not flags, at most the verb's
	// maxArgs (verbTable).
	args []string
}

func newCommand(name string, stdout, stderr io.Writer) (*command, error) {
	env, err := app.Env()
	if err != nil {
		return nil, err
	}
	c := &command{stdout: stdout, stderr: stderr}
	c.fs = c.cfg.NewFlagSet(name, env, false, io.Discard)
	c.fs.Usage = func() {}
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

// parse parses args into c's flags and c.args (see parseArgs).
func (c *command) parse(args []string) error {
	var err error
	c.args, err = parseArgs(c.fs, args)
	return err
}

// parseArgs parses args, whose flags may come before, between or after the
// verb's arguments (Go's flag package alone stops at the first argument),
// and returns the arguments. A flag fs does not know, or more arguments
// than the verb takes (maxArgs in verbTable, by fs's name), is a usage
// error naming it; -h or --help asks for the verb's help (*helpError).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	name := fs.Name()
	v, _ := lookupVerb(name)
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, &helpError{name: name, fs: fs}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errUsage, name, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// After "--" every argument is one, whatever its first character.
		dashes := len(rest) < len(args) && args[len(args)-len(rest)-1] == "--"
		for {
			if len(pos) == v.maxArgs {
				return nil, tooMany(v, name, rest[0])
			}
			pos = append(pos, rest[0])
			rest = rest[1:]
			if !dashes || len(rest) == 0 {
				break
			}
		}
		if len(rest) == 0 {
			return pos, nil
		}
		args = rest
	}
}

// tooMany is the usage error for an argument past the verb's last.
func tooMany(v verb, name, arg string) error {
	if v.maxArgs == 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, name, arg)
	}
	return fmt.Errorf("%w: %s takes at most %d argument(s) (%s), got %q too", errUsage, name, v.maxArgs, v.args, arg)
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

// verbAction splits the arguments of a group verb (`service
// install|uninstall|status`) into the action and what follows it. No
// action, or -h/--help, asks for the group's help; an unknown action is a
// usage error that names the actions (an *actionError).
func verbAction(verb string, args []string, actions ...string) (string, []string, error) {
	if len(args) > 0 && slices.Contains(actions, args[0]) {
		return args[0], args[1:], nil
	}
	if len(args) > 0 && isHelpFlag(args[0]) {
		return "", nil, &helpError{name: verb}
	}
	got := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		got = args[0]
	}
	return "", nil, &actionError{group: verb, actions: actions, got: got}
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
