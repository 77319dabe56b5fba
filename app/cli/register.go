package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// hookClaudeCode is register's --hook value for Claude Code's SessionStart.
const hookClaudeCode = "claude-code"

// hookAddressHint tells a session that did not reach a relay where the
// plugin takes the relay's address from.
const hookAddressHint = "the plugin takes CROSSCHAT_HOST, CROSSCHAT_PORT and CROSSCHAT_DATA_DIR from the env of ~/.claude/settings.json: docs/live-sessions.md"

// registerProject makes dir a project on the relay named by c's location
// flags, or finds the project it already is, and returns it:
//   - with no id given by hand (flagID, else CROSSCHAT_PROJECT_ID from env),
//     the nearest registered folder at or above dir is its project, as git
//     finds .git; a folder in none becomes a project named after itself;
//   - an id given by hand wins: the project of that id when dir is in it,
//     else dir's own project moved to that id (the old id retired), else a
//     new project of that id for dir.
//
// A new project's agent is created on the relay and its token kept in the
// user's project store; a project registered again changes nothing, after
// checking its token. Under the store's lock, so two sessions starting at
// once register a folder once.
func registerProject(c *command, dir, flagID string, env func(string) string) (registered, error) {
	dir, err := projectFolder(dir)
	if err != nil {
		return registered{}, err
	}
	if filepath.Dir(dir) == dir {
		// With --id it was taken, and every folder of the computer was
		// then inside that project.
		return registered{}, fmt.Errorf("%s cannot be a project: every folder of the computer is inside it; register the project's own folder", dir)
	}
	if err := holdsHome(dir); err != nil {
		return registered{}, err
	}
	given, _, err := project.ExplicitID(flagID, env(project.EnvID))
	if err != nil {
		return registered{}, err
	}
	store, err := projectStore()
	if err != nil {
		return registered{}, err
	}
	sayWaiting(store, c.stderr)
	base := localRelayURL(c)
	var out registered
	// movedRelay is the relay of the id the folder had before an explicit
	// id moved it: that id is retired there, never on another relay, where
	// an agent of that name is someone else's.
	movedRelay := ""
	err = store.Update(func(ps []project.Project) ([]project.Project, bool, error) {
		near := project.Nearest(ps, dir)
		if near >= 0 && holdsHome(ps[near].Dir) != nil {
			// Registered before such projects were refused: not the
			// project of every folder below it.
			fmt.Fprintf(c.stderr, "note: the project %q (%s) holds your home folder, so it is no folder's project; remove it: crosschat-relay projects remove %s\n", ps[near].ID, ps[near].Dir, ps[near].ID)
			near = -1
		}
		id, own := given, -1
		switch {
		case given == "" && near >= 0, near >= 0 && ps[near].ID == given:
			id = ps[near].ID
			out.Inside = !project.SameDir(ps[near].Dir, dir)
			dir = ps[near].Dir
		case given == "":
			if id, _, err = project.ResolveID("", "", dir); err != nil {
				return nil, false, err
			}
		default:
			own = slices.IndexFunc(ps, func(p project.Project) bool { return project.SameDir(p.Dir, dir) })
		}
		i := slices.IndexFunc(ps, func(p project.Project) bool { return p.ID == id })
		if i >= 0 && !project.SameDir(ps[i].Dir, dir) {
			return nil, false, fmt.Errorf("the project id %q is already the folder %s; give %s its own id: %s (or set %s)",
				id, ps[i].Dir, dir, registerCommand(dir, suggestID(id, dir, ps)), project.EnvID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), registerWait)
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
			out.Project = ps[i]
			if ps[i].Relay == base {
				return ps, false, nil
			}
			ps[i].Relay = base
			out.Project.Relay = base
			return ps, true, nil
		case ai >= 0 && !unclaimed(agents[ai], id, dir):
			return nil, false, fmt.Errorf("the name %q is taken on the relay at %s by %s, not by this folder; give %s another id: %s (or set %s, in the project's .claude/settings.json for its sessions)",
				id, base, describeAgent(agents[ai], agents), dir, registerCommand(dir, suggestID(id, dir, ps)), project.EnvID)
		}
		token, reinstated, err := createProjectAgent(ctx, c, id, dir, ai >= 0)
		if err != nil {
			return nil, false, err
		}
		p := project.Project{ID: id, Dir: dir, Relay: base, Token: token, RegisteredAt: time.Now().UTC().Format(time.RFC3339)}
		switch {
		case i >= 0:
			ps[i] = p
		case own >= 0:
			out.Moved, movedRelay = ps[own].ID, ps[own].Relay
			ps[own] = p
		default:
			ps = append(ps, p)
		}
		out.Project, out.Created, out.Reinstated = p, true, reinstated
		return ps, true, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return registered{}, fmt.Errorf("something answers at %s but not as a relay within %s (is it a crosschat relay?): %w", base, registerWait, err)
	}
	if err != nil {
		return registered{}, err
	}
	if out.Moved != "" {
		// The folder is the new id now; the old id's agent keeps its name
		// and tasks, without a token or new work.
		if movedRelay != base {
			out.MoveErr = fmt.Errorf("it is on the relay at %s, not this one", movedRelay)
		} else if err := c.call("Agents", "Retire", nil, out.Moved); err != nil {
			out.MoveErr = fmt.Errorf("retire %q: %w", out.Moved, err)
		}
		removeProjectCursors(out.Moved)
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

// createProjectAgent creates the agent of the project id in dir and returns
// its token. A retired agent of that id (a removed project, or the old id
// of a moved one) is brought back instead, with a new token; with leftOver,
// the agent a stopped register made for dir (unclaimed) is given one.
func createProjectAgent(ctx context.Context, c *command, id, dir string, leftOver bool) (token string, reinstated bool, err error) {
	var rev app.TokenReveal
	if leftOver {
		err = c.callCtx(ctx, "Agents", "RotateToken", &rev, id)
		return rev.Token, false, err
	}
	name := displayName(filepath.Base(dir), id)
	in := relay.CreateAgentInput{
		Slug: id, DisplayName: name, ModelSlug: projectModel,
		Capabilities: []string{"text-input", "text-output", "code-execution", "file-system"},
		Details:      projectDetails(name),
	}
	err = c.callCtx(ctx, "Agents", "Create", &rev, in)
	if relay.ErrorCode(err) == relay.EAgentExists {
		// Not in the agent list, yet there: retired.
		if rerr := c.callCtx(ctx, "Agents", "Reinstate", &rev, id); rerr == nil {
			return rev.Token, true, nil
		}
	}
	if err != nil {
		return "", false, err
	}
	return rev.Token, false, nil
}

// registerWait bounds what register asks the relay under the project
// store's lock, well below how long another command waits for that lock
// (internal/project).
var registerWait = 15 * time.Second

// projectModel is the model name of a project's agent: its sessions run
// whatever model they run.
const projectModel = "live-session"

// projectDetails is the role of the project agent of a folder named name.
func projectDetails(name string) string {
	return "Sessions in the project folder “" + name + "” (crosschat-relay register)."
}

// unclaimed reports whether a is the agent a register for dir made and
// then never kept: a project agent of dir's name, as register makes it,
// whose token nobody has used (last seen when it was made). A register
// stopped between making it and writing the project store (a session
// hook killed at its timeout, Ctrl-C) leaves one, which the next register
// of the folder takes with a new token instead of calling the name taken.
func unclaimed(a relay.Agent, id, dir string) bool {
	name := displayName(filepath.Base(dir), id)
	return a.Kind != relay.KindHuman && !a.Enrolled && a.HasToken && a.ModelSlug == projectModel &&
		a.DisplayName == name && a.Details == projectDetails(name) && a.LastSeenAt == a.RegisteredAt
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

// holdsHome refuses dir when it is the user's home folder or one of its
// parents: a subfolder is its parent's project (project.Nearest), so every
// project of the user's would be this one, a session started in the home
// folder (the plugin's hook) included.
func holdsHome(dir string) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil // no home to keep out
	}
	home = realdir.Pin(home)
	if project.Nearest([]project.Project{{Dir: dir}}, home) != 0 {
		return nil
	}
	what := "is your home folder"
	if !project.SameDir(dir, home) {
		what = "holds your home folder"
	}
	return fmt.Errorf("%s %s and cannot be a project: every project of yours is inside it; register the project's own folder (cd into it first)", dir, what)
}

// registerCommand is the register command that gives dir the id, to be
// run from any folder: it names dir when every shell reads it as it is
// (letters, digits and / . _ - :). For any other folder it says to run the
// command in that folder, named by the words around it: a folder's
// name is anyone's to choose, and no one quoting is safe in every shell
// (fish reads \' inside single quotes, PowerShell takes ’ for a quote,
// cmd.exe ignores '), so pasted it could run what the name holds.
func registerCommand(dir, id string) string {
	if strings.ContainsFunc(dir, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:", r))
	}) {
		return "run `crosschat-relay register --id " + id + "` in that folder"
	}
	return "crosschat-relay register --id " + id + " " + dir
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
	c, err := parseCommand("register", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&id, "id", "", "the project's id (default: "+project.EnvID+", else the project around the folder, else the folder's name)")
		fs.StringVar(&hook, "hook", "", "print what the named agent CLI's session-start hook expects (claude-code), and never fail")
	})
	if err != nil {
		return err
	}
	dir := ""
	if len(c.args) == 1 {
		dir = c.args[0]
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
	if note := r.note(); note != "" {
		fmt.Fprintln(stderr, "crosschat-relay:", note)
	}
	if c.json {
		return c.printJSON(map[string]any{"id": r.Project.ID, "dir": r.Project.Dir, "relay": r.Project.Relay, "created": r.Created, "movedFrom": r.Moved})
	}
	fmt.Fprintln(stdout, r.Project.ID)
	return r.MoveErr
}

// note is what register says besides the id: a folder inside a project, a
// project moved to a new id, a retired project brought back.
func (r registered) note() string {
	p := r.Project
	switch {
	case r.Moved != "" && r.MoveErr != nil:
		return fmt.Sprintf("the folder %s was the project %q and is now %q, but %q could not be retired (%v): remove it in the dashboard (Agents)", p.Dir, r.Moved, p.ID, r.Moved, r.MoveErr)
	case r.Moved != "":
		return fmt.Sprintf("the folder %s was the project %q and is now %q; %q is retired (its token revoked, its open tasks blocked and their senders told)", p.Dir, r.Moved, p.ID, r.Moved)
	case r.Reinstated:
		return fmt.Sprintf("the removed project %q is back, with a new token", p.ID)
	case r.Inside:
		return fmt.Sprintf("this folder is inside the project %q (%s); to make it a project of its own: crosschat-relay register --id NAME", p.ID, p.Dir)
	}
	return ""
}

// sessionStart registers the folder for Claude Code's SessionStart hook and
// prints the one line the hook answers with: the session's live link (the
// monitor recipe and the skill, in the context Claude Code gives the
// model) and a short line for the person. When the folder cannot be
// registered the line gives register's own reason, and it still exits 0:
// the session starts as it would without the plugin.
func sessionStart(c *command, dir, id string) error {
	type hookOutput struct {
		SystemMessage      string            `json:"systemMessage,omitempty"`
		HookSpecificOutput map[string]string `json:"hookSpecificOutput,omitempty"`
	}
	r, err := registerProject(c, dir, id, os.Getenv)
	var out hookOutput
	if err != nil {
		out.SystemMessage = "Crosschat Relay: this session is not connected: " + oneLine(errorText(err))
		if errors.Is(err, client.ErrNotRunning) || errors.Is(err, config.ErrNoToken) {
			out.SystemMessage += " (" + hookAddressHint + ")"
		}
	} else {
		p := r.Project
		out.SystemMessage = fmt.Sprintf("Crosschat Relay: this folder is the project %q on %s; others reach it with: crosschat-relay send %s \"…\"", p.ID, p.Relay, p.ID)
		if note := r.note(); note != "" {
			out.SystemMessage += " (" + oneLine(note) + ")"
		}
		out.HookSpecificOutput = map[string]string{
			"hookEventName": "SessionStart",
			"additionalContext": fmt.Sprintf("This project folder is the Crosschat Relay project %q: other sessions and agents send it tasks with `crosschat-relay send %s \"…\"`. "+
				"Unless this session already runs it, start the Monitor tool now with the command `crosschat-relay monitor %s --format message` and keep it running: each CROSSCHAT_MESSAGE line is a task for this project (kind \"task\") or news on a task it sent. "+
				"Follow the crosschat skill to act on them. The relay's tools are on the crosschat MCP server. To hand work to another project, run `crosschat-relay send <id> \"<message>\"`.", p.ID, p.ID, p.ID),
		}
	}
	b, _ := json.Marshal(out)
	_, werr := fmt.Fprintln(c.stdout, string(b))
	return werr
}

// oneLine folds s to one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
