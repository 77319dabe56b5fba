package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/loopback"
)

// Usage is the top-level help: every verb, from the verb table.
func Usage() string { return topUsage() }

// durationText is d as a person types it: Go's 24h0m0s, 30m0s and
// -1h30m0s are 24h, 30m and -1h30m (each reads back the same with
// time.ParseDuration); a zero minute or second inside (1h0m5s) stays.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

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
	// env is the environment the flags' defaults came from.
	env config.Env
	// args are the arguments that are not flags, at most the verb's
	// maxArgs (verbTable).
	args []string
	// named says a flag or the environment named the relay's address
	// (--host, --port): the run file did not.
	named bool
}

func newCommand(name string, stdout, stderr io.Writer) (*command, error) {
	env, err := app.Env()
	if err != nil {
		return nil, err
	}
	c := &command{stdout: stdout, stderr: stderr, env: env}
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

// parse parses args into c's flags and c.args (see parseArgs). When
// neither a flag nor the environment names the relay's address, the relay
// serving the data folder is asked where its run file says it listens (as
// status finds it): one started with --port is found without it.
func (c *command) parse(args []string) error {
	var err error
	if c.args, err = parseArgs(c.fs, args); err != nil {
		return err
	}
	named := false
	c.fs.Visit(func(f *flag.Flag) { named = named || f.Name == "port" || f.Name == "host" })
	for _, k := range []string{config.EnvPort, config.EnvHost} {
		v, set := c.env(k)
		named = named || (set && v != "")
	}
	c.named = named
	if info, ok, rerr := app.ReadRunFile(c.cfg.DataDir); !named && rerr == nil && ok {
		if u, uerr := url.Parse(info.URL); uerr == nil && u.Hostname() != "" {
			if port, perr := strconv.Atoi(u.Port()); perr == nil && port > 0 {
				c.cfg.Host, c.cfg.Port = u.Hostname(), port
			}
		}
	}
	return nil
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
			return nil, fmt.Errorf("%w: %s: %v", errUsage, name, config.FlagError(fs, err))
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
	n := "one argument"
	if v.maxArgs > 1 {
		n = strconv.Itoa(v.maxArgs) + " arguments"
	}
	return fmt.Errorf("%w: %s takes at most %s (%s), got %q too", errUsage, name, n, v.args, arg)
}

func (c *command) client() (*client.Client, error) {
	token, err := c.cfg.AdminToken(false)
	if errors.Is(err, config.ErrNoToken) && c.named {
		// --port says where a relay listens, not which data folder (and
		// admin token) is its.
		return nil, fmt.Errorf("%w in %s: to talk to the relay at %s, pass its data folder with --data-dir (or set %s)", config.ErrNoToken, c.cfg.TokenPath(), c.addr(), config.EnvAPIToken)
	}
	if err != nil {
		return nil, err
	}
	return client.New("http://"+c.addr(), token), nil
}

// addr is the relay's address to call: its host and port, an
// every-address host (or none) as 127.0.0.1.
func (c *command) addr() string {
	cfg := c.cfg
	if loopback.Everywhere(cfg.Host) {
		cfg.Host = "127.0.0.1"
	}
	return cfg.Addr()
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
