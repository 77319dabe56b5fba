package app

import (
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Invites creates and manages enrollment invites.
type Invites struct{ c *core }

// InviteCreated is a new invite with its code (shown once) and the message
// to paste into an agent's chat.
type InviteCreated struct {
	Invite  relay.Invite `json:"invite"`
	Code    string       `json:"code"`
	Message string       `json:"message"`
}

// Create makes an invite; its message names the relay's address (see address.go).
func (i *Invites) Create(in relay.InviteInput) (InviteCreated, error) {
	return i.CreateAt(in, "")
}

// CreateAt is Create for a dashboard reached at origin ("" when unknown):
// the message names that address when the relay allows it (see address.go).
func (i *Invites) CreateAt(in relay.InviteInput, origin string) (InviteCreated, error) {
	svc, ctx, err := i.c.get()
	if err != nil {
		return InviteCreated{}, err
	}
	inv, code, err := svc.CreateInvite(ctx, in)
	if err != nil {
		return InviteCreated{}, err
	}
	msg := InviteMessage(i.c.reachedURL(origin), code, inv, time.Local)
	return InviteCreated{Invite: inv, Code: code, Message: msg}, nil
}

// List returns invites, newest first.
func (i *Invites) List() ([]relay.Invite, error) {
	svc, ctx, err := i.c.get()
	if err != nil {
		return nil, err
	}
	return svc.ListInvites(ctx)
}

// Revoke stops an invite from being used again.
func (i *Invites) Revoke(id string) (relay.Invite, error) {
	svc, ctx, err := i.c.get()
	if err != nil {
		return relay.Invite{}, err
	}
	return svc.RevokeInvite(ctx, id)
}
