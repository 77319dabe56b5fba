package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/project"
)

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

// callCtx is call with the caller's context.
func (c *command) callCtx(ctx context.Context, service, method string, out any, args ...any) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.Call(ctx, service, method, out, args...)
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
