package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Command runs a CLI verb and returns the process exit code.
func Command(args []string, version string, stdout, stderr io.Writer) int {
	err := runCommand(args, version, stdout, stderr)
	var he *helpError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &he):
		writeHelp(stdout, he.name, he.fs)
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(exitCode)):
		var ec exitCode
		errors.As(err, &ec)
		return int(ec)
	case errors.Is(err, errUsage):
		writeUsageError(stderr, args, err)
		return 2
	default:
		fmt.Fprintln(stderr, "crosschat-relay:", errorText(err))
		return 1
	}
}

// errorText is what the CLI says of a failed verb (register's words are
// also the hook's): a relay's refusal with its code, else the error.
func errorText(err error) string {
	var re *relay.Error
	if errors.As(err, &re) {
		return fmt.Sprintf("%s (%s)", termSafeText(re.Message), termSafe(re.Code))
	}
	return termSafeText(err.Error())
}

// verbRunner runs a top-level verb with the arguments after its name.
type verbRunner func(x cmdIO, args []string) error

// cmdIO is what a verb runs with besides its arguments.
type cmdIO struct {
	version        string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// dispatch is every top-level verb the CLI runs (serve, the window and
// URLs are main's). TestVerbHelp checks each has its help in verbTable.
func dispatch() map[string]verbRunner {
	return map[string]verbRunner{
		"version": func(x cmdIO, a []string) error { return versionCmd(a, x.version, x.stdout) },
		"help": func(x cmdIO, args []string) error {
			return helpCmd(args, func(a []string) error {
				if a[0] == "serve" { // main runs serve, whose help is app's
					app.Serve([]string{"--help"}, nil, x.version, x.stdout, x.stderr)
					return nil
				}
				return runCommand(a, x.version, x.stdout, x.stderr)
			}, x.stdout)
		},
		"token":           func(x cmdIO, a []string) error { return tokenCmd(a, x.stdout, x.stderr) },
		"autostart":       func(x cmdIO, a []string) error { return autostartCmd(a, x.stdout, x.stderr) },
		"open":            func(x cmdIO, a []string) error { return openCmd(a, x.stdout, x.stderr) },
		"workers":         func(x cmdIO, a []string) error { return workersCmd(a, x.stdout, x.stderr) },
		"harnesses":       func(x cmdIO, a []string) error { return harnessesCmd(a, x.stdout, x.stderr) },
		"quit":            func(x cmdIO, a []string) error { return quitCmd(a, x.stdout, x.stderr) },
		"status":          func(x cmdIO, a []string) error { return statusCmd(a, x.stdout, x.stderr) },
		"logs":            func(x cmdIO, a []string) error { return logsCmd(a, x.stdout, x.stderr) },
		"service":         func(x cmdIO, a []string) error { return serviceCmd(a, x.stdout, x.stderr) },
		"import-upstream": func(x cmdIO, a []string) error { return importUpstreamCmd(a, x.stdout, x.stderr) },
		"bench":           func(x cmdIO, a []string) error { return benchCmd(a, x.version, x.stdout, x.stderr) },
		"mesh":            func(x cmdIO, a []string) error { return meshCmd(a, x.stdout, x.stderr) },
		"monitor":         func(x cmdIO, a []string) error { return monitorCmd(a, x.stdout, x.stderr) },
		"register":        func(x cmdIO, a []string) error { return registerCmd(a, x.stdout, x.stderr) },
		"send":            func(x cmdIO, a []string) error { return sendCmd(a, x.stdin, x.stdout, x.stderr) },
		"sessions":        func(x cmdIO, a []string) error { return sessionsCmd(a, x.stdout, x.stderr) },
		"channel":         func(x cmdIO, a []string) error { return channelCmd(a, x.version, x.stdin, x.stdout, x.stderr) },
		"claude-plugin":   func(x cmdIO, a []string) error { return claudePluginCmd(a, x.stdout, x.stderr) },
		"projects":        func(x cmdIO, a []string) error { return projectsCmd(a, x.stdout, x.stderr) },
		"agents":          func(x cmdIO, a []string) error { return agentsCmd(a, x.stdout, x.stderr) },
		"invites":         func(x cmdIO, a []string) error { return invitesCmd(a, x.stdout, x.stderr) },
		"tasks":           func(x cmdIO, a []string) error { return tasksCmd(a, x.stdout, x.stderr) },
	}
}

// aliases are the other spellings of verbs, as verbTable documents them.
var aliases = map[string]string{"--version": "version", "-v": "version", "--help": "help", "-h": "help"}

func runCommand(args []string, version string, stdout, stderr io.Writer) error {
	name := args[0]
	if a, ok := aliases[name]; ok {
		name = a
	}
	run, ok := dispatch()[name]
	if !ok {
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	return run(cmdIO{version: version, stdin: os.Stdin, stdout: stdout, stderr: stderr}, args[1:])
}
