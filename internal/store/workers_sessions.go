package store

import (
	"context"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// SessionResolver resolves a post's targetSession (an id or exact name)
// against the sessions recipient can be reached in by sender's tasks,
// returning the session's id, or a session_not_found or session_ambiguous
// error. The app passes internal/session's Resolver.
type SessionResolver func(ctx context.Context, sender, recipient, ref string) (id string, err error)

// SetSessionResolver makes PostTask check a task's targetSession when it is
// posted and record the session's id as its target; nil turns that off.
func (db *DB) SetSessionResolver(r SessionResolver) {
	if r == nil {
		db.sessions.Store(nil)
		return
	}
	db.sessions.Store(&r)
}

// resolveTarget resolves in.TargetSession for a local recipient before the
// post's write (reading the CLIs' session files must not hold the writer).
// A recipient that is not a local agent is left to the write's checks (an
// unknown agent) or to its own relay (a mesh agent).
func (db *DB) resolveTarget(ctx context.Context, in relay.PostTaskInput) (relay.PostTaskInput, error) {
	r := db.sessions.Load()
	if r == nil || in.TargetSession == "" {
		return in, nil
	}
	local, err := exists(ctx, db.r, "recipient", `SELECT 1 FROM agents WHERE slug = ? AND slug NOT IN (SELECT slug FROM mesh_agents)`, in.RecipientSlug)
	if err != nil || !local {
		return in, err
	}
	id, err := (*r)(ctx, in.SenderSlug, in.RecipientSlug, in.TargetSession)
	if err != nil {
		return in, err
	}
	in.TargetSession = id
	return in, nil
}
