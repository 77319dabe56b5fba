package app

import "github.com/crosschat/crosschat-relay/internal/relay"

// Settings reads and changes relay-wide settings.
type Settings struct{ c *core }

// Get returns the current settings.
func (s *Settings) Get() (relay.Settings, error) {
	svc, ctx, err := s.c.get()
	if err != nil {
		return relay.Settings{}, err
	}
	return svc.Settings(ctx)
}

// Update stores new settings; pausing takes effect on the workers at once.
func (s *Settings) Update(in relay.Settings) (relay.Settings, error) {
	svc, ctx, err := s.c.get()
	if err != nil {
		return relay.Settings{}, err
	}
	out, err := svc.UpdateSettings(ctx, in)
	if err != nil {
		return relay.Settings{}, err
	}
	if f := s.c.pauseHook(); f != nil {
		f(out.WorkersPaused)
	}
	return out, nil
}
