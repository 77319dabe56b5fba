package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
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

// hookClaudeCode is register's --hook value for Claude Code's SessionStart.
const hookClaudeCode = "claude-code"

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
		var rev app.TokenReveal
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
	return client.NewAgent(base, token, "").Tool(ctx, "whoami", nil, nil)
}

// openPush opens the agent's push stream once (until its ready event), so
// the relay writes its events from now on.
func openPush(base, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ready := false
	ps := &client.PushStream{BaseURL: base, Token: token, After: -1,
		OnEvent: func(relay.PushEvent) error { return nil },
		OnReady: func(int64) { ready = true; cancel() },
	}
	if err := ps.Run(ctx); err != nil {
		return err
	}
	if !ready {
		return errors.New("the stream did not open within 10 s")
	}
	return nil
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
