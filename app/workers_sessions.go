package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
)

// Session workers: a Claude Code or Codex worker bound to an existing
// session (docs/live-sessions.md, "Session workers").

// turns is the session stores of this computer's user, with the turn locks
// every relay of the user shares.
func (w *Workers) turns() session.Turns {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = filepath.Join(w.env.Home, ".cache")
	}
	return session.Turns{Sessions: w.sessions(), LockDir: filepath.Join(dir, "crosschat-relay", "session-locks")}
}

// sessions is the session stores of this computer's user.
func (w *Workers) sessions() session.Store { return UserSessions(w.env) }

// UserSessions is the session stores of env's user, where the CLIs keep
// them (CLAUDE_CONFIG_DIR and CODEX_HOME followed, as harness.SystemEnv
// reads them).
func UserSessions(env harness.Env) session.Store {
	return session.Store{Home: env.Home, ClaudeDir: env.ClaudeDir, CodexDir: env.CodexDir}
}

// bindSession resolves cfg.Session (an id or exact name) to the session it
// names on this computer and stores its id and label. A name two sessions
// share is refused with the candidates, one that matches none with similar
// names; the session must have run in the worker's folder, where the CLI
// resumes it. A worker saved again with the id it was bound to keeps it,
// even if the name is now shared.
func (w *Workers) bindSession(cfg relay.WorkerConfig) (relay.WorkerConfig, error) {
	if cfg.Session == "" {
		cfg.SessionID, cfg.SessionLabel = "", ""
		return cfg, nil
	}
	st := w.sessions()
	var s session.Session
	found := false
	if cfg.SessionID != "" {
		if got, err := st.Lookup(cfg.Harness, cfg.SessionID); err == nil && got.ID == cfg.SessionID &&
			(cfg.Session == got.ID || cfg.Session == got.Name || cfg.Session == got.Title) {
			s, found = got, true
		}
	}
	if !found {
		got, err := st.Lookup(cfg.Harness, cfg.Session)
		var amb *session.AmbiguousError
		var none *session.NotFoundError
		switch {
		case errors.As(err, &amb):
			cands := make([]SessionChoice, 0, len(amb.Candidates))
			for _, c := range amb.Candidates {
				cands = append(cands, choice(c))
			}
			return cfg, relay.Errorf(relay.EInvalidRequest, "session: %s", err.Error()).WithDetails(map[string]any{"candidates": cands})
		case errors.As(err, &none):
			return cfg, relay.Errorf(relay.EInvalidRequest, "session: %s", err.Error()).WithDetails(map[string]any{"similar": none.Similar})
		case err != nil:
			return cfg, relay.Errorf(relay.EInvalidRequest, "session: %s", err.Error())
		}
		s = got
	}
	if filepath.Clean(s.Folder) != filepath.Clean(cfg.Workdir) {
		return cfg, relay.Errorf(relay.EInvalidRequest,
			"session: %q ran in %s; set the working folder to it (the CLI resumes a session from the folder it ran in).", s.Label(), s.Folder)
	}
	cfg.SessionID, cfg.SessionLabel = s.ID, s.Label()
	return cfg, nil
}

// SessionChoice is a session a worker can be bound to.
type SessionChoice struct {
	Tool   string `json:"tool"`
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	Title  string `json:"title,omitempty"`
	Folder string `json:"folder"`
	// LastActive is RFC 3339.
	LastActive string `json:"lastActive"`
	// Idle tells that it has been idle for more than a day (a run that
	// resumes it shows a warning).
	Idle bool `json:"idle"`
}

func choice(s session.Session) SessionChoice {
	return SessionChoice{Tool: s.Tool, ID: s.ID, Name: s.Name, Title: s.Title, Folder: s.Folder,
		LastActive: relay.FormatTime(s.LastActive), Idle: time.Since(s.LastActive) > 24*time.Hour}
}

// Sessions lists the sessions of an agent CLI (claude-code or codex) on
// this computer that ran in workdir ("" for every folder), newest first:
// the worker form's session picker.
func (w *Workers) Sessions(harnessID, workdir string) ([]SessionChoice, error) {
	if _, _, err := w.c.get(); err != nil {
		return nil, err
	}
	if harnessID != relay.SessionClaudeCode && harnessID != relay.SessionCodex {
		return []SessionChoice{}, nil
	}
	list, err := w.sessions().List(harnessID)
	if err != nil {
		return nil, err
	}
	out := []SessionChoice{}
	for _, s := range list {
		if workdir == "" || filepath.Clean(s.Folder) == filepath.Clean(workdir) {
			out = append(out, choice(s))
		}
	}
	return out, nil
}

// targetResolver resolves a post's targetSession against the sessions its
// recipient can be reached in (store.SessionResolver): the resolved id is
// the task's target.
func (w *Workers) targetResolver(workers relay.WorkerService, live liveSessionLister) func(ctx context.Context, sender, recipient, ref string) (string, error) {
	r := session.Resolver{Sources: append(w.sessionSources(workers), liveSessions(live))}
	return func(ctx context.Context, sender, recipient, ref string) (string, error) {
		s, err := r.Resolve(ctx, sender, recipient, ref)
		return s.ID, err
	}
}

// sessionSources are the places an agent's workers can reach its sessions:
// the bound session and the sessions an any-session worker may resume.
// targetResolver adds the live sessions; another source is one line there.
func (w *Workers) sessionSources(workers relay.WorkerService) []session.Source {
	return []session.Source{boundSessions(workers, w.sessions()), anySessions(workers, w.sessions())}
}

// liveSessionLister lists the sessions whose channel or monitor told the
// relay who they are (store.DB.LiveSessions).
type liveSessionLister interface {
	LiveSessions(ctx context.Context, agentSlug string) ([]relay.LiveSession, error)
}

// liveSessions are the agent's live sessions: a task naming one is pushed to
// that session's stream only. Listed after the workers' sources, so a
// session a worker also knows keeps the worker's fuller description.
func liveSessions(live liveSessionLister) session.Source {
	return func(ctx context.Context, _, agent string) (session.Found, error) {
		list, err := live.LiveSessions(ctx, agent)
		if err != nil {
			return session.Found{}, err
		}
		found := session.Found{Sessions: make([]session.Session, 0, len(list))}
		for _, l := range list {
			seen, _ := relay.ParseTime(l.LastSeen) // zero when unreadable: shown without a time
			found.Sessions = append(found.Sessions, session.Session{Tool: relay.SessionClaudeCode, ID: l.ID, Name: l.Name, LastActive: seen})
		}
		return found, nil
	}
}

// workerOf is the agent's worker, ok false when it has none or when it
// does not take sender's tasks (sender not among its AllowedSenders): its
// sessions are then neither offered nor named to sender.
func workerOf(ctx context.Context, workers relay.WorkerService, sender, agent string) (relay.WorkerConfig, bool, error) {
	cfg, err := workers.Worker(ctx, agent)
	if relay.ErrorCode(err) == relay.EUnknownWorker {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	return cfg, slices.Contains(cfg.AllowedSenders, sender), nil
}

// boundSessions is the session the agent's worker is bound to, while it is
// on this computer.
func boundSessions(workers relay.WorkerService, st session.Store) session.Source {
	return func(ctx context.Context, sender, agent string) (session.Found, error) {
		cfg, ok, err := workerOf(ctx, workers, sender, agent)
		if err != nil || !ok || cfg.SessionID == "" {
			return session.Found{}, err
		}
		s, err := st.ByID(cfg.Harness, cfg.SessionID)
		var gone *session.NotFoundError
		if errors.As(err, &gone) {
			return session.Found{}, nil
		}
		if err != nil {
			return session.Found{}, err
		}
		return session.Found{Sessions: []session.Session{s}}, nil
	}
}

// anySessions are the sessions the agent's any-session worker may resume:
// its CLI's newest session.RecentBound, that ran in the worker's folders
// (checked on resolved paths: a folder reached through a symbolic link is
// not one of them).
func anySessions(workers relay.WorkerService, st session.Store) session.Source {
	return func(ctx context.Context, sender, agent string) (session.Found, error) {
		cfg, ok, err := workerOf(ctx, workers, sender, agent)
		if err != nil || !ok || !cfg.AnySession {
			return session.Found{}, err
		}
		return st.Within(ctx, cfg.Harness, session.RecentBound, realdir.Keep(cfg.SessionFolders()))
	}
}
