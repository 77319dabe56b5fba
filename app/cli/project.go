package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/project"
	"github.com/crosschat/crosschat-relay/internal/realdir"
)

// projectStore opens the user's project store.
func projectStore() (*project.Store, error) {
	dir, err := project.DefaultDir()
	if err != nil {
		return nil, err
	}
	return project.Open(dir), nil
}

// sayWaiting has store tell on stderr when a change waits for another
// command's lock (a register asking a relay that is slow to answer).
func sayWaiting(store *project.Store, stderr io.Writer) {
	store.SetWaiting(func(lock string) {
		fmt.Fprintf(stderr, "crosschat-relay: waiting for another crosschat-relay command to finish with the project store (it holds %s)…\n", lock)
	})
}

// localRelayURL is the base URL of the relay named by the location flags,
// as this computer reaches it.
func localRelayURL(c *command) string {
	return "http://" + c.addr()
}

// registered is the outcome of registering a folder.
type registered struct {
	Project project.Project
	// Created is set when the project's agent was made (or brought back).
	Created bool
	// Inside is set when the folder is inside the project's folder.
	Inside bool
	// Moved is the id the folder had before an explicit id moved it;
	// MoveErr says why that id could not be retired.
	Moved   string
	MoveErr error
	// Reinstated is set when the project's retired agent was brought back.
	Reinstated bool
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
	abs = realdir.Pin(abs)
	st, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("there is no folder %s", dir)
	}
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	return filepath.Clean(abs), nil
}

// callCtx is call with the caller's context.
func (c *command) callCtx(ctx context.Context, service, method string, out any, args ...any) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.Call(ctx, service, method, out, args...)
}

// errNoProject is findProject's answer when nothing names a project and the
// working folder is in none, or CROSSCHAT_PROJECT_ID names one not
// registered yet: errors.Is(err, errNoProject) holds for a noProject.
var errNoProject = errors.New("no project")

// noProject is an errNoProject that says which.
type noProject string

func (e noProject) Error() string        { return string(e) }
func (e noProject) Is(target error) bool { return target == errNoProject }

// unregistered is findProject's answer for an id on the command line that
// no project registered on this computer has.
type unregistered string

func (e unregistered) Error() string { return string(e) }

// findProject finds the registered project a verb acts as: the one named
// on its command line (id, as the verb's argument or --from), else the one
// CROSSCHAT_PROJECT_ID names, else the nearest registered folder at or
// above the working folder, as git finds .git. A name on the command line
// that is no project registered on this computer is refused saying so; a
// CROSSCHAT_PROJECT_ID not registered yet, or no name and no project around
// the folder, is errNoProject (wrapped, saying which).
func findProject(id string, env func(string) string) (project.Project, error) {
	store, err := projectStore()
	if err != nil {
		return project.Project{}, err
	}
	from := ""
	if id == "" {
		if raw := env(project.EnvID); raw != "" {
			if strings.TrimSpace(raw) == "" {
				return project.Project{}, fmt.Errorf("%s is blank: set it to a project id, or unset it", project.EnvID)
			}
			id, from = raw, project.EnvID+" names"
		}
	}
	if id != "" {
		if err := project.CheckGiven(id); err != nil {
			return project.Project{}, fmt.Errorf("project id %q refused: %v", id, err)
		}
		p, ok, err := store.Get(project.Normalize(id))
		if err != nil {
			return p, err
		}
		const hint = "crosschat-relay projects list shows those that are; crosschat-relay register makes a folder one"
		switch {
		case !ok && from != "":
			// Not registered yet: a verb that registers (channel
			// --register) registers the folder under that id.
			return p, noProject(fmt.Sprintf("%s %q, which is not a project registered on this computer (%s)", from, id, hint))
		case !ok:
			return p, unregistered(fmt.Sprintf("no project %q is registered on this computer (%s)", id, hint))
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return project.Project{}, fmt.Errorf("the current folder: %w", err)
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	p, ok, err := store.Find(wd)
	if err != nil {
		return p, err
	}
	if !ok {
		return p, noProject(wd + " is in no registered project")
	}
	if holdsHome(p.Dir) != nil {
		// Registered before such projects were refused (holdsHome).
		return p, noProject(fmt.Sprintf("%s is in no project of its own (the project %q, %s, holds your home folder and is no folder's project: crosschat-relay projects remove %s)", wd, p.ID, p.Dir, p.ID))
	}
	return p, nil
}

// locationGiven reports whether --host or --port was given, on the command
// line or in the environment.
func locationGiven(fs *flag.FlagSet, env func(string) string) bool {
	return env(config.EnvHost) != "" || env(config.EnvPort) != "" || locationFlagged(fs)
}

// locationFlagged reports whether --host or --port was given on the
// command line.
func locationFlagged(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "host" || f.Name == "port" {
			given = true
		}
	})
	return given
}

// projectCursorFile is where the verb (monitor or channel) keeps a
// registered project's cursor by default: in the user's config folder,
// beside the project store, so a new session resumes where the last one
// stopped. The channel keeps a cursor of its own ("<id>.channel"; an id has
// no dot, so no project's file is another's): Claude Code drops channel
// events unless the session was started with development channels, and
// nothing tells the channel, so what it sent must still reach the
// monitor, which the plugin has every session start.
func projectCursorFile(id, verb string) (string, error) {
	dir, err := project.DefaultDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "cursors")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the cursor folder: %w", err)
	}
	name := id
	if verb == "channel" {
		name += ".channel"
	}
	return filepath.Join(dir, name), nil
}

// removeProjectCursors forgets a project's cursors (monitor's and
// channel's).
func removeProjectCursors(id string) {
	for _, verb := range []string{"monitor", "channel"} {
		if state, err := projectCursorFile(id, verb); err == nil {
			_ = os.Remove(state)
		}
	}
}
