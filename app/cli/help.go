package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// verb is one verb or sub-verb of the command line, as its help shows it.
// Every verb the dispatcher runs has one in verbTable (TestVerbHelp).
type verb struct {
	// name is the verb as typed: "send", "agents add". A group of
	// sub-verbs ("agents") has its own entry too.
	name string
	// args is what follows the name on the usage line ("ID MESSAGE").
	args string
	// maxArgs is how many arguments (not flags) it takes; more are refused.
	maxArgs int
	// summary is the one-line description.
	summary string
	// about is more text under the usage line, if any.
	about string
	// example is one or more command lines.
	example string
}

// usageLine is v's usage: crosschat-relay NAME ARGS.
func (v verb) usageLine() string {
	return strings.TrimSpace("crosschat-relay " + v.name + " " + v.args)
}

var (
	verbIndexOnce sync.Once
	verbIndex     map[string]verb
)

// lookupVerb returns the table's entry for name ("agents add").
func lookupVerb(name string) (verb, bool) {
	verbIndexOnce.Do(func() {
		verbIndex = make(map[string]verb, len(verbTable))
		for _, v := range verbTable {
			verbIndex[v.name] = v
		}
	})
	v, ok := verbIndex[name]
	return v, ok
}

// subVerbs returns the entries of group's sub-verbs, in table order.
func subVerbs(group string) []verb {
	var out []verb
	for _, v := range verbTable {
		if rest, ok := strings.CutPrefix(v.name, group+" "); ok && !strings.Contains(rest, " ") {
			out = append(out, v)
		}
	}
	return out
}

// verbOf is the verb args name: the longest table entry its first words
// match ("agents add" for agents add x), "" for none.
func verbOf(args []string) string {
	for n := min(2, len(args)); n > 0; n-- {
		name := strings.Join(args[:n], " ")
		if _, ok := lookupVerb(name); ok {
			return name
		}
	}
	return ""
}

// helpError asks Command to print the help of a verb (with its flags when
// fs is set) on stdout and exit 0. It wraps flag.ErrHelp.
type helpError struct {
	name string
	fs   *flag.FlagSet
}

func (e *helpError) Error() string { return "help for " + e.name }
func (e *helpError) Unwrap() error { return flag.ErrHelp }

// actionError is a group verb run without one of its actions. It lists
// the actions its dispatcher knows, and wraps errUsage.
type actionError struct {
	group   string
	actions []string
	got     string
}

func (e *actionError) Error() string {
	names := e.actions[len(e.actions)-1]
	if n := len(e.actions); n > 1 {
		names = strings.Join(e.actions[:n-1], ", ") + " or " + names
	}
	msg := fmt.Sprintf("%s needs %s", e.group, names)
	if e.got != "" {
		msg += fmt.Sprintf(", not %q", e.got)
	}
	return errUsage.Error() + ": " + msg
}

func (e *actionError) Unwrap() error { return errUsage }

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--h"
}

// writeHelp prints the help of name: its description, usage, further text,
// flags (from fs, when given) and example; for a group, its sub-verbs.
func writeHelp(w io.Writer, name string, fs *flag.FlagSet) {
	v, ok := lookupVerb(name)
	if !ok {
		fmt.Fprintf(w, "crosschat-relay %s\n", name)
		return
	}
	fmt.Fprintf(w, "crosschat-relay %s: %s\n\nUsage:\n", v.name, v.summary)
	if subs := subVerbs(v.name); len(subs) > 0 {
		writeVerbList(w, subs)
		fmt.Fprintf(w, "\nRun `crosschat-relay %s ACTION --help` for an action's flags.\n", v.name)
	} else {
		fmt.Fprintf(w, "  %s\n", v.usageLine())
	}
	if v.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(v.about, "\n"))
	}
	if fs != nil {
		writeFlags(w, fs)
	}
	if v.example != "" {
		fmt.Fprintf(w, "\nExample:\n  %s\n", strings.ReplaceAll(strings.TrimRight(v.example, "\n"), "\n", "\n  "))
	}
}

// writeUsageError prints a usage error and the usage of the verb args
// name, not the whole help.
func writeUsageError(w io.Writer, args []string, err error) {
	fmt.Fprintln(w, "crosschat-relay:", termSafeText(strings.TrimPrefix(err.Error(), errUsage.Error()+": ")))
	name := verbOf(args)
	if name == "" {
		var names []string
		for _, v := range verbTable {
			if !strings.Contains(v.name, " ") {
				names = append(names, v.name)
			}
		}
		if len(args) > 0 {
			if sim := relay.Similar(args[0], names, strings.ToLower, 3); len(sim) > 0 {
				fmt.Fprintf(w, "Did you mean %s?\n", strings.Join(sim, ", "))
			}
		}
		fmt.Fprintln(w, "Run `crosschat-relay --help` for the verbs.")
		return
	}
	v, _ := lookupVerb(name)
	fmt.Fprintln(w, "\nUsage:")
	if subs := subVerbs(name); len(subs) > 0 {
		writeVerbList(w, subs)
	} else {
		fmt.Fprintf(w, "  %s\n", v.usageLine())
	}
	fmt.Fprintf(w, "Run `crosschat-relay %s --help` for more, with an example.\n", name)
}

// writeVerbList prints verbs one a line: the usage line and, aligned or
// under it, the summary.
func writeVerbList(w io.Writer, vs []verb) {
	const col = 46
	for _, v := range vs {
		line := "  " + v.usageLine()
		if len(line) < col {
			fmt.Fprintf(w, "%-*s%s\n", col, line, v.summary)
		} else {
			fmt.Fprintf(w, "%s\n%*s%s\n", line, col, "", v.summary)
		}
	}
}

// commonFlags are the flags every verb has (newCommand).
var commonFlags = []string{"host", "port", "data-dir", "json"}

// writeFlags prints fs's flags as --name VALUE (-x VALUE for a one-letter
// name) and their text: the verb's own first, then the relay's that every
// verb asking a relay has. A flag whose text starts "internal:" is left out.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	var own, common []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case strings.HasPrefix(f.Usage, "internal:"):
			// A flag the verb gives itself (bench's child processes).
		case slices.Contains(commonFlags, f.Name) && fs.Lookup("port") != nil:
			common = append(common, f)
		default:
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range own {
			config.WriteFlag(w, helpFlag(f))
		}
	}
	if len(common) > 0 {
		fmt.Fprintln(w, "\nThe relay (every verb):")
		for _, f := range common {
			config.WriteFlag(w, helpFlag(f))
		}
	}
}

// helpFlag is f as its help line shows it: a duration's default as it is
// typed (24h, 30m), not as Go spells it (24h0m0s, 30m0s). f itself is left
// as it is; any other flag is f.
func helpFlag(f *flag.Flag) *flag.Flag {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return f
	}
	if _, isDuration := g.Get().(time.Duration); !isDuration {
		return f
	}
	d, err := time.ParseDuration(f.DefValue)
	if err != nil {
		return f
	}
	shown := *f
	shown.DefValue = durationText(d)
	return &shown
}

// topUsage is the help of crosschat-relay itself: every verb with its
// usage and summary, from the table.
func topUsage() string {
	var b strings.Builder
	b.WriteString(`Crosschat Relay: a durable task inbox for AI agents, served over MCP.

Usage:
  crosschat-relay [--hidden]                  open the desktop app (the relay runs inside it)
`)
	var vs []verb
	for _, v := range verbTable {
		if len(subVerbs(v.name)) == 0 {
			vs = append(vs, v)
		}
	}
	writeVerbList(&b, vs)
	b.WriteString(`
Run ` + "`crosschat-relay VERB --help`" + ` (or ` + "`crosschat-relay help VERB`" + `) for a verb's flags and an example.
The verbs that talk to the running relay find it with --host/--port (CROSSCHAT_HOST/
CROSSCHAT_PORT) and authenticate with the admin token from CROSSCHAT_API_TOKEN or the
api-token file in --data-dir (CROSSCHAT_DATA_DIR). Each takes --json for machine-readable
output. No verb reads a .env file. The admin token is sent only after the relay has
proved it holds it, and over plain HTTP only to this computer.
Exit codes: 0 ok, 1 failed or refused, 2 usage error, 3 (status) not running.
`)
	return b.String()
}

// helpCmd is `crosschat-relay help [VERB]`: the whole help, or a verb's.
func helpCmd(args []string, run func(args []string) error, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, topUsage())
		return nil
	}
	if isHelpFlag(args[0]) {
		return &helpError{name: "help"}
	}
	if verbOf(args) == "" {
		return fmt.Errorf("%w: unknown command %q", errUsage, strings.Join(args, " "))
	}
	return run(append(slices.Clone(args), "--help"))
}

// errUsage marks a usage error: exit code 2 and the verb's usage.
var errUsage = errors.New("usage")
