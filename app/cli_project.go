package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// registerUsage is the help of register; the flags follow it.
const registerUsage = `Usage: crosschat-relay register [DIR] [--id ID]

Makes the project folder DIR (default: the current folder) an address on the
local relay: creates the project's agent if it does not exist, keeps its token
in your own config folder (owner-only, never inside the project) and prints the
project id. The id comes from --id, else CROSSCHAT_PROJECT_ID, else the folder's
name, normalised ("My Project!" → my-project). Running it again prints the same
id. Then monitor and channel, started in the folder, need no token.

Flags:
`

// sendUsage is the help of send; the flags follow it.
const sendUsage = `Usage: crosschat-relay send ID MESSAGE [--title T] [--priority P]

Posts MESSAGE as a task from the current folder's project (registered on the
fly) to the project or agent ID, prints the task's id and returns at once.
MESSAGE "-" reads it from standard input.

Flags:
`

// hookClaudeCode is register's --hook value for Claude Code's SessionStart.
const hookClaudeCode = "claude-code"

// maxStdinMessage bounds a message read from standard input (the relay's
// instructions limit).
const maxStdinMessage = 40000

// projectStore opens the user's project store.
func projectStore() (*project.Store, error) {
	dir, err := project.DefaultDir()
	if err != nil {
		return nil, err
	}
	return project.Open(dir), nil
}

// localRelayURL is the base URL of the relay named by the location flags,
// as this computer reaches it.
func localRelayURL(c *command) string {
	cfg := c.cfg
	if cfg.Host == "0.0.0.0" || cfg.Host == "::" || cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	return "http://" + cfg.Addr()
}

// splitPositional parses args whose flags may come before, between or after
// up to n positional arguments, and returns the positional ones.
func splitPositional(c *command, args []string, n int) ([]string, error) {
	var pos []string
	for {
		if err := c.parse(args); err != nil {
			return nil, err
		}
		args = c.fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if len(pos) == n {
			return nil, fmt.Errorf("%w: %s takes at most %d arguments, got %q too", errUsage, c.fs.Name(), n, args[0])
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// registered is the outcome of registering a folder.
type registered struct {
	Project project.Project
	Created bool
}

// projectFolder returns dir (default: the working folder) absolute, with
// symbolic links resolved, and checks it is a folder.
func projectFolder(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("the current folder: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	return filepath.Clean(abs), nil
}

// registerProject makes dir a project on the relay named by c's location
// flags: it resolves the id (flagID, then CROSSCHAT_PROJECT_ID from env,
// then the folder's name), creates the project's agent if it does not exist
// and keeps its token in the user's project store. Registering the same
// folder again changes nothing. Under the store's lock, so two sessions
// starting at once register a folder once.
func registerProject(c *command, dir, flagID string, env func(string) string) (registered, error) {
	dir, err := projectFolder(dir)
	if err != nil {
		return registered{}, err
	}
	id, src, err := project.ResolveID(flagID, env(project.EnvID), dir)
	if err != nil {
		return registered{}, err
	}
	store, err := projectStore()
	if err != nil {
		return registered{}, err
	}
	base := localRelayURL(c)
	var out registered
	err = store.Update(func(ps []project.Project) ([]project.Project, bool, error) {
		if j := slices.IndexFunc(ps, func(p project.Project) bool { return project.SameDir(p.Dir, dir) }); j >= 0 && ps[j].ID != id {
			if src != project.FromFolder {
				return nil, false, fmt.Errorf("the folder %s is already the project %q; it keeps that id (its agent and token stay as they are)", dir, ps[j].ID)
			}
			// The folder was registered under an id given by hand: that is its id.
			id = ps[j].ID
		}
		i := slices.IndexFunc(ps, func(p project.Project) bool { return p.ID == id })
		if i >= 0 && !project.SameDir(ps[i].Dir, dir) {
			return nil, false, fmt.Errorf("the project id %q is already the folder %s; give %s its own id: crosschat-relay register --id %s (or set %s)",
				id, ps[i].Dir, dir, suggestID(id, dir, ps), project.EnvID)
		}
		// Bounded well below the store lock's staleness (internal/project).
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var agents []relay.Agent
		if err := c.callCtx(ctx, "Agents", "List", &agents); err != nil {
			return nil, false, err
		}
		ai := slices.IndexFunc(agents, func(a relay.Agent) bool { return a.Slug == id })
		switch {
		case ai >= 0 && i >= 0 && !agents[ai].HasToken:
			return nil, false, fmt.Errorf("the token of the project %q was revoked on the relay; issue a new one in the dashboard (Agents), or delete the agent and register again", id)
		case ai >= 0 && i >= 0:
			// Registered from this folder: the kept token must still be the
			// agent's (on this relay, whatever name it was reached by).
			if err := checkToken(ctx, base, ps[i].Token); err != nil {
				if relay.ErrorCode(err) == relay.EUnauthorized || strings.Contains(err.Error(), "HTTP 401") {
					return nil, false, fmt.Errorf("the relay at %s has an agent %q, but not with the token kept for %s (it was replaced, or belongs to another relay); delete that agent in the dashboard (Agents) and register again, or give this folder another id with --id", base, id, dir)
				}
				return nil, false, err
			}
			out = registered{Project: ps[i]}
			if ps[i].Relay == base {
				return ps, false, nil
			}
			ps[i].Relay = base
			out.Project.Relay = base
			return ps, true, nil
		case ai >= 0:
			return nil, false, fmt.Errorf("the relay already has an agent named %q that was not registered from %s; give this folder another id: crosschat-relay register --id %s", id, dir, suggestID(id, dir, ps))
		}
		var rev TokenReveal
		name := displayName(filepath.Base(dir), id)
		in := relay.CreateAgentInput{
			Slug: id, DisplayName: name, ModelSlug: "live-session",
			Capabilities: []string{"text-input", "text-output", "code-execution", "file-system"},
			Details:      "Sessions in the project folder “" + name + "” (crosschat-relay register).",
		}
		if err := c.callCtx(ctx, "Agents", "Create", &rev, in); err != nil {
			return nil, false, err
		}
		p := project.Project{ID: id, Dir: dir, Relay: base, Token: rev.Token, RegisteredAt: time.Now().UTC().Format(time.RFC3339)}
		if i >= 0 {
			ps[i] = p
		} else {
			ps = append(ps, p)
		}
		out = registered{Project: p, Created: true}
		return ps, true, nil
	})
	if err != nil {
		return registered{}, err
	}
	if out.Created {
		// From now on the project's push stream is written, so a monitor
		// started later gets what arrived in between.
		if err := openPush(out.Project.Relay, out.Project.Token); err != nil {
			fmt.Fprintf(c.stderr, "crosschat-relay: %s registered, but its push stream did not open: %v\n", out.Project.ID, err)
		}
	}
	return out, nil
}

// displayName is a folder's name as the project agent's display name:
// control characters dropped, at most 80 characters; id when nothing is left.
func displayName(folder, id string) string {
	name := strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, folder))
	name = shorten(name, project.MaxIDLen)
	if name == "" {
		return id
	}
	return name
}

// suggestID proposes a free id for dir: the parent folder's name and the
// folder's, else id with a number.
func suggestID(id, dir string, ps []project.Project) string {
	taken := func(s string) bool {
		return slices.ContainsFunc(ps, func(p project.Project) bool { return p.ID == s })
	}
	if s := project.Normalize(filepath.Base(filepath.Dir(dir)) + "-" + id); project.Check(s, s) == nil && !taken(s) {
		return s
	}
	for n := 2; ; n++ {
		s := id + "-" + strconv.Itoa(n)
		if len(s) > project.MaxIDLen {
			s = id[:project.MaxIDLen-len(strconv.Itoa(n))-1] + "-" + strconv.Itoa(n)
		}
		if !taken(s) {
			return s
		}
	}
}

// checkToken asks the relay at base who token is (whoami).
func checkToken(ctx context.Context, base, token string) error {
	cl := bench.NewClient(base, 2)
	defer cl.Close()
	return cl.Tool(ctx, token, "whoami", nil, nil)
}

// callCtx is call with the caller's context.
func (c *command) callCtx(ctx context.Context, service, method string, out any, args ...any) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.Call(ctx, service, method, out, args...)
}

// openPush opens the agent's push stream once (until its ready event), so
// the relay writes its events from now on.
func openPush(base, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/push", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "event: ready" {
			return nil
		}
	}
	return errors.New("the stream ended before it was ready")
}

// registerCmd is `crosschat-relay register [DIR] [--id ID]`; with --hook
// claude-code it is the plugin's SessionStart hook (see sessionStart).
func registerCmd(args []string, stdout, stderr io.Writer) error {
	var id, hook string
	c, err := newCommand("register", stdout, stderr)
	if err != nil {
		return err
	}
	c.fs.StringVar(&id, "id", "", "the project's id (default: "+project.EnvID+", else the folder's name)")
	c.fs.StringVar(&hook, "hook", "", "print what the named agent CLI's session-start hook expects (claude-code), and never fail")
	c.fs.Usage = func() {
		fmt.Fprint(stderr, registerUsage)
		c.fs.PrintDefaults()
	}
	pos, err := splitPositional(c, args, 1)
	if err != nil {
		return err
	}
	dir := ""
	if len(pos) == 1 {
		dir = pos[0]
	}
	switch hook {
	case "":
	case hookClaudeCode:
		return sessionStart(c, dir, id)
	default:
		return fmt.Errorf("%w: --hook %q: the one hook known is %s", errUsage, hook, hookClaudeCode)
	}
	r, err := registerProject(c, dir, id, os.Getenv)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"id": r.Project.ID, "dir": r.Project.Dir, "relay": r.Project.Relay, "created": r.Created})
	}
	fmt.Fprintln(stdout, r.Project.ID)
	return nil
}

// sessionStart registers the folder for Claude Code's SessionStart hook and
// prints the one line the hook answers with: the session's live link (the
// monitor recipe and the skill, in the context Claude Code gives the
// model) and a short line for the person. When the folder cannot be
// registered (no relay running, a refused id) the line says why, and it
// still exits 0: the session starts as it would without the plugin.
func sessionStart(c *command, dir, id string) error {
	type hookOutput struct {
		SystemMessage      string            `json:"systemMessage,omitempty"`
		HookSpecificOutput map[string]string `json:"hookSpecificOutput,omitempty"`
	}
	r, err := registerProject(c, dir, id, os.Getenv)
	var out hookOutput
	if err != nil {
		out.SystemMessage = "Crosschat Relay: this session is not connected: " + oneLine(hookReason(err, localRelayURL(c)))
	} else {
		p := r.Project
		out.SystemMessage = fmt.Sprintf("Crosschat Relay: this folder is the project %q on %s; others reach it with: crosschat-relay send %s \"…\"", p.ID, p.Relay, p.ID)
		out.HookSpecificOutput = map[string]string{
			"hookEventName": "SessionStart",
			"additionalContext": fmt.Sprintf("This project folder is the Crosschat Relay project %q: other sessions and agents send it tasks with `crosschat-relay send %s \"…\"`. "+
				"Unless this session already runs it, start the Monitor tool now with the command `crosschat-relay monitor --format message` and keep it running: each CROSSCHAT_MESSAGE line is a task for this project (kind \"task\") or news on a task it sent. "+
				"Follow the crosschat skill to act on them. The relay's tools are on the crosschat MCP server. To hand work to another project, run `crosschat-relay send <id> \"<message>\"`.", p.ID, p.ID),
		}
	}
	b, _ := json.Marshal(out)
	_, werr := fmt.Fprintln(c.stdout, string(b))
	return werr
}

// hookReason is why the hook could not register the folder, in words for
// the person starting the session.
func hookReason(err error, base string) string {
	switch {
	case errors.Is(err, client.ErrNotRunning):
		return "no relay is running at " + base + " (start Crosschat Relay, then start the session again)"
	default:
		return relay.ErrorMessage(err)
	}
}

// oneLine folds s to one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// sendCmd is `crosschat-relay send ID MESSAGE`: a task from the current
// folder's project to ID, fire and forget.
func sendCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var id, title, prio string
	c, err := newCommand("send", stdout, stderr)
	if err != nil {
		return err
	}
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
	cl := bench.NewClient(from.Relay, 2)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	post := func(recipient string) (relay.Task, error) {
		var task relay.Task
		err := cl.Tool(ctx, from.Token, "post_task", map[string]any{
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
func unknownRecipient(ctx context.Context, cl *bench.Client, from project.Project, to string) error {
	var names []string
	var agents []relay.Agent
	if err := cl.Tool(ctx, from.Token, "list_agents", map[string]any{"includeOffline": true}, &agents); err == nil {
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

// projectToken finds the registered project for the live verbs: the one
// named by CROSSCHAT_PROJECT_ID, else the one whose folder holds the
// working folder. ok is false when there is none.
func projectToken(env func(string) string) (p project.Project, ok bool, err error) {
	store, err := projectStore()
	if err != nil {
		return p, false, err
	}
	if raw := strings.TrimSpace(env(project.EnvID)); raw != "" {
		if err := project.CheckGiven(raw); err != nil {
			return p, false, fmt.Errorf("%s refused: %v", project.EnvID, err)
		}
		return store.Get(project.Normalize(raw))
	}
	wd, err := os.Getwd()
	if err != nil {
		return p, false, nil
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return store.Find(wd)
}

// locationGiven reports whether --host or --port was given, on the command
// line or in the environment.
func locationGiven(fs *flag.FlagSet, env func(string) string) bool {
	given := env(config.EnvHost) != "" || env(config.EnvPort) != ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "host" || f.Name == "port" {
			given = true
		}
	})
	return given
}

// projectCursorFile is where monitor and channel keep a registered
// project's cursor by default: in the user's config folder, beside the
// project store, so a new session resumes where the last one stopped.
func projectCursorFile(id string) (string, error) {
	dir, err := project.DefaultDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "cursors")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the cursor folder: %w", err)
	}
	return filepath.Join(dir, id), nil
}
