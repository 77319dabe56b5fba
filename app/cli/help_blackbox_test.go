package cli_test

import (
	"strings"
	"testing"
)

// Every verb and sub-verb a person types answers --help and -h with exit
// 0 on stdout: a one-line description, its usage, its flags and an example;
// a usage error prints that verb's usage only, never the whole help.
func TestEveryVerbAnswersHelp(t *testing.T) {
	projectHome(t)
	verbs := []string{
		"agents", "agents add", "agents list", "invites", "invites create", "tasks", "tasks list", "tasks show",
		"workers", "workers list", "workers set", "workers remove", "workers pause", "workers resume",
		"mesh", "mesh status", "mesh agents", "mesh relays", "mesh trust", "mesh block", "mesh invite", "mesh names", "mesh name", "mesh nats-config",
		"sessions", "sessions list", "sessions show", "service", "service install", "service uninstall", "service status",
		"autostart", "autostart enable", "autostart disable", "autostart status",
		"status", "token", "quit", "open", "logs", "harnesses", "import-upstream", "bench",
		"register", "send", "monitor", "channel", "claude-plugin", "projects", "projects list", "projects remove", "version", "help",
	}
	for _, verb := range verbs {
		for _, flag := range []string{"--help", "-h"} {
			args := append(strings.Fields(verb), flag)
			out, errs, code := run(t, args...)
			if code != 0 || !strings.HasPrefix(out, "crosschat-relay "+verb+": ") || !strings.Contains(out, "Usage:") || !strings.Contains(out, "Example") {
				t.Errorf("%s %s: exit %d\nstdout %q\nstderr %q", verb, flag, code, out, errs)
			}
		}
	}
	_, errs, code := run(t, "tasks", "list", "--frob")
	if code != 2 || !strings.Contains(errs, "frob") || !strings.Contains(errs, "crosschat-relay tasks list") || strings.Contains(errs, "crosschat-relay mesh") {
		t.Errorf("a usage error: exit %d, %q", code, errs)
	}
	// Client verbs name the relay they talk to, not an address to listen on.
	out, _, _ := run(t, "agents", "list", "--help")
	if strings.Contains(out, "listen on") {
		t.Errorf("agents list --help: %s", out)
	}
}
