package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/session"
)

// sessionsCmd is `crosschat-relay sessions list|show`: the Claude Code
// sessions and Codex threads on this computer (read from their own files;
// no relay needed).
func sessionsCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("sessions", args, "list", "show")
	if err != nil {
		return err
	}
	// No relay is asked: the verb takes none of the relay's flags.
	c := &command{stdout: stdout, stderr: stderr, fs: flag.NewFlagSet("sessions "+action, flag.ContinueOnError)}
	c.fs.SetOutput(io.Discard)
	var tool, home string
	c.fs.StringVar(&tool, "tool", "", "only this CLI's sessions: claude-code or codex")
	c.fs.StringVar(&home, "home", "", "the home folder whose sessions to read (default: yours, with CLAUDE_CONFIG_DIR and CODEX_HOME followed)")
	c.fs.BoolVar(&c.json, "json", false, "print JSON")
	if c.args, err = parseArgs(c.fs, rest); err != nil {
		return err
	}
	if tool != "" && tool != session.ClaudeCode && tool != session.Codex {
		return fmt.Errorf("%w: sessions %s: --tool %q: give %s or %s", errUsage, action, tool, session.ClaudeCode, session.Codex)
	}
	var ref string
	if action == "show" {
		if len(c.args) == 0 {
			return fmt.Errorf("%w: sessions show needs a session id or exact name", errUsage)
		}
		ref = c.args[0]
	}
	st := session.Store{Home: home}
	if home == "" {
		if _, err := os.UserHomeDir(); err != nil {
			return fmt.Errorf("find your home folder: %w", err)
		}
		st = app.UserSessions(harness.SystemEnv())
	}
	if action == "show" {
		s, err := st.Lookup(tool, ref)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(s)
		}
		name := s.Name
		if name == "" {
			name = "(none; generated title: " + s.Title + ")"
		}
		fmt.Fprintf(stdout, "Tool:        %s\nID:          %s\nName:        %s\nTitle:       %s\nFolder:      %s\nLast active: %s (%s ago)\nTranscript:  %s\n",
			termSafe(s.Tool), termSafe(s.ID), termSafe(name), termSafe(s.Title), termSafe(s.Folder), s.LastActive.Local().Format(time.RFC3339), time.Since(s.LastActive).Round(time.Minute), termSafe(s.Path))
		return nil
	}
	list, err := st.List(tool)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(list)
	}
	return c.table("TOOL\tID\tLAST ACTIVE\tNAME OR TITLE\tFOLDER", func(tw io.Writer) {
		for _, s := range list {
			label := s.Label()
			if !s.Named() {
				label = "(" + label + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termSafe(s.Tool), termSafe(s.ID), s.LastActive.Local().Format("2006-01-02 15:04"), termSafe(label), termSafe(s.Folder))
		}
	})
}
