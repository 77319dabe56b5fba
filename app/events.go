package app

import "github.com/crosschat/crosschat-relay/internal/relay"

// Events reads the update journal.
type Events struct{ c *core }

// List returns journal events, newest first.
func (e *Events) List(f relay.EventFilter) ([]relay.Event, error) {
	svc, ctx, err := e.c.get()
	if err != nil {
		return nil, err
	}
	return svc.ListEvents(ctx, f)
}
