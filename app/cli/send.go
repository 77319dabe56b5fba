package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// sendUsage is the help of send; the flags follow it.
const sendUsage = `Usage: crosschat-relay send ID MESSAGE [--title T] [--priority P] [--session ID]

Posts MESSAGE as a task from the current folder's project (registered on the
fly) to the project or agent ID, prints the task's id and returns at once.
MESSAGE "-" reads it from standard input. Run from a live session (--session,
else CLAUDE_CODE_SESSION_ID, which Claude Code sets), the task is that
session's: its updates reach that session alone, and sent while the session
holds a task it continues that task's conversation (see docs/live-sessions.md).

Flags:
`

// maxStdinMessage bounds a message read from standard input (the relay's
// instructions limit).
const maxStdinMessage = 40000

// sendCmd is `crosschat-relay send ID MESSAGE`: a task from the current
// folder's project to ID, fire and forget.
func sendCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var id, title, prio string
	var live liveFlags
	c, err := newCommand("send", stdout, stderr)
	if err != nil {
		return err
	}
	live.sessionFlag(c)
	c.fs.StringVar(&id, "id", "", "this folder's project id (default: "+project.EnvID+", else the folder's name)")
	c.fs.StringVar(&title, "title", "", "the task's title (default: the message's first line, shortened)")
	c.fs.StringVar(&prio, "priority", "normal", "low, normal or urgent (1, 2 or 3)")
	c.fs.Usage = func() {
		fmt.Fprint(stderr, sendUsage)
		c.fs.PrintDefaults()
	}
	pos, err := splitPositional(c, args, 2)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("%w: send needs the recipient and the message: crosschat-relay send ID MESSAGE (MESSAGE - reads standard input)", errUsage)
	}
	to, msg := pos[0], pos[1]
	if err := project.CheckGiven(to); err != nil {
		return fmt.Errorf("%w: recipient %q refused: %v", errUsage, to, err)
	}
	priority, err := parsePriority(prio)
	if err != nil {
		return err
	}
	session, _, err := live.liveSession(os.Getenv)
	if err != nil {
		return err
	}
	if msg == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxStdinMessage+1))
		if err != nil {
			return fmt.Errorf("read the message from standard input: %w", err)
		}
		if len(b) > maxStdinMessage {
			return fmt.Errorf("the message on standard input is longer than %d bytes", maxStdinMessage)
		}
		msg = string(b)
	}
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return fmt.Errorf("%w: the message is empty", errUsage)
	}
	if title == "" {
		first, _, _ := strings.Cut(msg, "\n")
		title = shorten(strings.TrimSpace(first), 80)
	}
	r, err := registerProject(c, "", id, os.Getenv)
	if err != nil {
		return err
	}
	from := r.Project
	cl := client.NewAgent(from.Relay, from.Token, session)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	post := func(recipient string) (relay.Task, error) {
		var task relay.Task
		err := cl.Tool(ctx, "post_task", map[string]any{
			"recipientSlug": recipient, "title": title, "instructions": msg, "priority": priority,
		}, &task)
		return task, err
	}
	// The recipient as given (any agent's name), then by the project id rules.
	recipient := strings.ToLower(strings.TrimSpace(to))
	task, err := post(recipient)
	if relay.ErrorCode(err) == relay.EUnknownAgent || relay.ErrorCode(err) == relay.EInvalidRequest {
		if n := project.Normalize(to); n != recipient && project.Check(n, to) == nil {
			recipient = n
			task, err = post(n)
		}
	}
	if relay.ErrorCode(err) == relay.EUnknownAgent {
		return unknownRecipient(ctx, cl, from, to)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(task)
	}
	fmt.Fprintln(stdout, task.ID)
	return nil
}

// unknownRecipient is the error for a send to an id nobody registered,
// naming the similar ids the relay and this computer know.
func unknownRecipient(ctx context.Context, cl *client.Agent, from project.Project, to string) error {
	var names []string
	var agents []relay.Agent
	if err := cl.Tool(ctx, "list_agents", map[string]any{"includeOffline": true}, &agents); err == nil {
		for _, a := range agents {
			names = append(names, a.Slug)
		}
	}
	if store, err := projectStore(); err == nil {
		if ps, err := store.List(); err == nil {
			for _, p := range ps {
				names = append(names, p.ID)
			}
		}
	}
	msg := fmt.Sprintf("nobody registered the project %q on the relay at %s (no agent has that name)", to, from.Relay)
	if sim := similarIDs(to, names); len(sim) > 0 {
		msg += "; similar: " + strings.Join(sim, ", ")
	} else {
		msg += "; run `crosschat-relay register` in that project's folder first"
	}
	return errors.New(msg)
}

// similarIDs returns up to five of names close to ref: containing it, it
// containing them, or a few edits away.
func similarIDs(ref string, names []string) []string {
	return relay.Similar(ref, names, project.Normalize, 5)
}

// parsePriority reads low|normal|urgent or 1|2|3.
func parsePriority(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "low":
		return 1, nil
	case "2", "normal", "":
		return 2, nil
	case "3", "urgent", "high":
		return 3, nil
	}
	return 0, fmt.Errorf("%w: --priority %q: use low, normal or urgent (1, 2 or 3)", errUsage, s)
}
