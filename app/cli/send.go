package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// maxStdinMessage bounds a message read from standard input (the relay's
// instructions limit).
const maxStdinMessage = 40000

// sendCmd is `crosschat-relay send ID MESSAGE`: a task from the current
// folder's project to the project ID, fire and forget.
func sendCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var from, title, prio string
	var toAgent bool
	var live liveFlags
	c, err := newCommand("send", stdout, stderr)
	if err != nil {
		return err
	}
	live.sessionFlag(c)
	c.fs.StringVar(&from, "from", "", "the sending project's id, or operator: you, with the admin token (default: "+project.EnvID+", else the project of the current folder)")
	c.fs.StringVar(&title, "title", "", "the task's title (default: the message's first line, shortened)")
	c.fs.StringVar(&prio, "priority", "normal", "low, normal or urgent (or 1, 2, 3)")
	c.fs.BoolVar(&toAgent, "agent", false, "ID is an agent that is not a project registered on this computer (made by hand, an invitee, another relay's): send it all the same")
	if err := c.parse(args); err != nil {
		return err
	}
	if len(c.args) != 2 {
		return fmt.Errorf("%w: send needs the recipient and the message: crosschat-relay send ID MESSAGE (MESSAGE - reads standard input)", errUsage)
	}
	to, msg := c.args[0], c.args[1]
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
	sender, err := findProject(from, os.Getenv)
	if errors.Is(err, errNoProject) {
		return fmt.Errorf("%v, so nothing sends this task: run `crosschat-relay register` in the project's folder first, name the sending project with --from ID (crosschat-relay projects list), or send as you, the operator, with --from operator", err)
	}
	if err != nil && from != "" {
		return sendAsOperator(c, from, to, toAgent, app.NewTask{Title: title, Instructions: msg, Priority: priority}, err)
	}
	if err != nil {
		return err
	}
	cl := client.NewAgent(sender.Relay, sender.Token, session)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recipient, err := sendRecipient(to, toAgent, &sender, func() (agents []relay.Agent, err error) {
		return agents, cl.Tool(ctx, "list_agents", map[string]any{"includeOffline": true}, &agents)
	})
	if err != nil {
		return err
	}
	var task relay.Task
	err = cl.Tool(ctx, "post_task", map[string]any{
		"recipientSlug": recipient, "title": title, "instructions": msg, "priority": priority,
	}, &task)
	switch relay.ErrorCode(err) {
	case relay.EUnknownAgent:
		if details := relayDetails(err); details["retired"] == true {
			return err
		}
		return unknownRecipient(ctx, cl, sender, to)
	case relay.ESelfTask:
		return selfSend(sender)
	}
	if err != nil {
		return err
	}
	return sent(c, task)
}

// sent prints the task a send posted, after workerNote's note.
func sent(c *command, task relay.Task) error {
	if note := workerNote(c, task); note != "" {
		fmt.Fprintln(c.stderr, note)
	}
	if c.json {
		return c.printJSON(task)
	}
	fmt.Fprintln(c.stdout, task.ID)
	return nil
}

// sendAsOperator posts the task as the operator, through the bridge call
// the dashboard's New task makes (Tasks.Post), when from is "operator" or
// the relay's operator slug: with the admin token, as the admin verbs
// have it (--data-dir, CROSSCHAT_API_TOKEN). Otherwise it is notProject,
// the error of from as a project, saying how to send as the operator.
func sendAsOperator(c *command, from, to string, toAgent bool, in app.NewTask, notProject error) error {
	from = strings.ToLower(strings.TrimSpace(from))
	var info app.Info
	err := c.call("Overview", "Info", &info)
	switch {
	case err != nil && from == relay.DefaultOperatorSlug:
		return fmt.Errorf("--from %s sends as you, the operator, with the relay's admin token: %w", from, err)
	case err != nil:
		return fmt.Errorf("%v; to send as you, the operator, use --from operator with the relay's admin token (--data-dir of the relay, or CROSSCHAT_API_TOKEN)", notProject)
	case from != relay.DefaultOperatorSlug && from != info.OperatorSlug:
		return fmt.Errorf("%v; to send as you, the operator, use --from %s", notProject, info.OperatorSlug)
	}
	recipient, err := sendRecipient(to, toAgent, nil, func() (agents []relay.Agent, err error) {
		return agents, c.call("Agents", "List", &agents)
	})
	if err != nil {
		return err
	}
	if recipient == info.OperatorSlug {
		return fmt.Errorf("%s is you, the operator, who sends this task: name the project or agent to do it", recipient)
	}
	in.RecipientSlug = recipient
	var task relay.Task
	if err := c.call("Tasks", "Post", &task, in); err != nil {
		return err
	}
	return sent(c, task)
}

// workerNote says, when the recipient has a worker here that does not take
// tasks from the task's sender, that the task waits for the agent to claim
// it and how to let the worker run it: a worker takes only the senders the
// operator allowed, and such a task otherwise waits without a word. ""
// when the workers cannot be read (no admin token at hand) or nothing
// needs saying.
func workerNote(c *command, task relay.Task) string {
	var out app.WorkersOverview
	if err := c.call("Workers", "List", &out); err != nil {
		return ""
	}
	for _, w := range out.Workers {
		if w.AgentSlug != task.RecipientSlug || !w.Enabled || slices.Contains(w.AllowedSenders, task.SenderSlug) {
			continue
		}
		allow := ""
		for _, s := range append(slices.Clone(w.AllowedSenders), task.SenderSlug) {
			allow += " --allow-sender " + s
		}
		return fmt.Sprintf("note: %s's worker runs only the tasks of %s, so this task waits for %s to claim it. To let the worker run %s's tasks, add it to the worker's allowed senders: on the dashboard, or `crosschat-relay workers set %s%s`",
			termSafe(w.AgentSlug), termSafe(strings.Join(w.AllowedSenders, ", ")), termSafe(w.AgentSlug), termSafe(task.SenderSlug), termSafe(w.AgentSlug), termSafe(allow))
	}
	return ""
}

// sendRecipient is the name send posts to: a project registered on this
// computer (as given, or by the id rules), or with toAgent any name. A name
// the relay knows (list: its agents) that is no project here is refused
// saying what it is, asking for --agent; the sending project (sender, nil
// for the operator) itself is refused saying what to do instead; a name
// nobody here has is the post's to refuse.
func sendRecipient(to string, toAgent bool, sender *project.Project, list func() ([]relay.Agent, error)) (string, error) {
	names := []string{strings.ToLower(strings.TrimSpace(to))}
	if n := project.Normalize(to); n != names[0] && project.Check(n, to) == nil {
		names = append(names, n)
	}
	if sender != nil && slices.Contains(names, sender.ID) {
		return "", selfSend(*sender)
	}
	if toAgent {
		return names[0], nil
	}
	if store, err := projectStore(); err == nil {
		for _, n := range names {
			if _, ok, err := store.Get(n); err == nil && ok {
				return n, nil
			}
		}
	}
	agents, err := list()
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if i := slices.IndexFunc(agents, func(a relay.Agent) bool { return a.Slug == n }); i >= 0 {
			return "", fmt.Errorf("%q is not a project registered on this computer: it is %s. To send it this task all the same: crosschat-relay send --agent %s …",
				n, describeAgent(agents[i], agents), n)
		}
	}
	// Nobody here by that name: the post asks the relay, which tells a
	// retired agent (a removed project) from a name nobody has.
	return names[len(names)-1], nil
}

// selfSend refuses a task from a project to itself.
func selfSend(p project.Project) error {
	return fmt.Errorf("%q is the sending project itself (%s), and a project sends no task to itself: do the work there, or send it from another project's folder (or with --from ID)", p.ID, p.Dir)
}

// relayDetails is the details of a relay refusal, nil for none.
func relayDetails(err error) map[string]any {
	var re *relay.Error
	if errors.As(err, &re) {
		return re.Details
	}
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
	if store, err := projectStore(); err == nil {
		if p, ok, err := store.Get(project.Normalize(to)); err == nil && ok && p.Relay != from.Relay {
			return fmt.Errorf("the project %q is registered on the relay at %s, and %q on the one at %s: a task goes from a project to another of the same relay (or of its mesh)", p.ID, p.Relay, from.ID, from.Relay)
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

// priorityNames are the priorities' words, as send takes them and the
// dashboard shows them, by number (1 to 3).
var priorityNames = [...]string{1: "low", 2: "normal", 3: "urgent"}

// priorityName is the word for priority p, or p itself out of range.
func priorityName(p int) string {
	if p >= 1 && p < len(priorityNames) {
		return priorityNames[p]
	}
	return strconv.Itoa(p)
}

// parsePriority reads low|normal|urgent or 1|2|3 ("" is normal).
func parsePriority(s string) (int, error) {
	w := cmp.Or(strings.ToLower(strings.TrimSpace(s)), priorityNames[2])
	for p := 1; p < len(priorityNames); p++ {
		if w == priorityNames[p] || w == strconv.Itoa(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: --priority %q: use low, normal or urgent (1, 2 or 3)", errUsage, s)
}
