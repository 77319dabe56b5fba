package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/realdir"
)

// Turns gives a session worker what it needs of the user's sessions:
// finding the bound session, its turn lock (non-blocking, so the
// worker can renew its task's lease while it waits) and answer recovery.
// Its methods use only standard types, so the worker needs no import of
// this package.
type Turns struct {
	// Sessions are the session stores read.
	Sessions Store
	// LockDir holds the turn lock files (one per session), shared by every
	// relay of the user on this computer.
	LockDir string
}

// Find returns the label (the name a person gave it, else its generated
// title) and the last activity of the tool's session with id.
func (t Turns) Find(tool, id string) (label string, lastActive time.Time, err error) {
	s, err := t.find(tool, id)
	if err != nil {
		return "", time.Time{}, err
	}
	return s.Label(), s.LastActive, nil
}

// find looks a session up by id only (never by name).
func (t Turns) find(tool, id string) (Session, error) { return t.Sessions.ByID(tool, id) }

// TryLock takes the session's turn lock for token without waiting; when a
// live owner holds it, ok is false and holder says who.
func (t Turns) TryLock(id, token string) (ok bool, holder string, err error) {
	l, h, err := TryAcquire(t.LockDir, id, token)
	if err != nil || l != nil {
		return l != nil, "", err
	}
	if h.PID == 0 {
		return false, "", nil
	}
	return false, fmt.Sprintf("process %d, since %s", h.PID, h.Since.Local().Format("15:04:05")), nil
}

// Unlock releases the session's turn lock held with token.
func (t Turns) Unlock(id, token string) error { return Release(t.LockDir, id, token) }

// Recover returns the assistant text of the tool's session id written
// after the request carrying token (records stamped before since, the
// turn's claim, are ignored), "" when there is none. A turn that ended in
// the CLI's own error is a *FailedError (its Failure method gives the
// cause), a session that moved on a *MovedOnError.
func (t Turns) Recover(tool, id, token string, since time.Time) (string, error) {
	s, err := t.find(tool, id)
	if err != nil {
		return "", err
	}
	text, err := Recover(s, token, since)
	if errors.Is(err, ErrNoAnswer) {
		return "", nil
	}
	return text, err
}

// Locate finds the tool's session that ref names for an any-session
// worker, among the sessions that ran in roots only (the worker's folders,
// checked on the resolved paths: see realdir.Within): by id, or by
// exact name among the newest RecentBound sessions (see Resolver). It
// returns the session's id and its resolved folder. Its errors name no
// folder: they reach the task's sender.
func (t Turns) Locate(tool, ref string, roots []string) (id, folder string, err error) {
	src := func(ctx context.Context, _, _ string) (Found, error) {
		return t.Sessions.Within(ctx, tool, RecentBound, realdir.Keep(roots))
	}
	s, err := Resolver{Sources: []Source{src}}.Resolve(context.Background(), "", "", ref)
	if err != nil {
		return "", "", err
	}
	if folder, err = realdir.Within(s.Folder, roots); err != nil {
		return "", "", err // changed since it was listed
	}
	return s.ID, folder, nil
}
