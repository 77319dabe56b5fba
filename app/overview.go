package app

import "github.com/crosschat/crosschat-relay/internal/relay"

// Overview answers what the relay is and how busy it is.
type Overview struct{ c *core }

// Info describes the running relay.
type Info struct {
	Version      string `json:"version"`
	OperatorSlug string `json:"operatorSlug"`
	DashboardURL string `json:"dashboardUrl"`
	MCPURL       string `json:"mcpUrl"`
	DataDir      string `json:"dataDir"`
	// RetentionDays is how long finished tasks are kept (--task-retention-days).
	RetentionDays float64 `json:"retentionDays"`
}

// Info returns the version, addresses and data folder.
func (o *Overview) Info() (Info, error) {
	svc, _, err := o.c.get()
	if err != nil {
		return Info{}, err
	}
	cfg := o.c.config()
	return Info{Version: o.c.version, OperatorSlug: svc.OperatorSlug(), DashboardURL: cfg.BaseURL() + "/", MCPURL: cfg.MCPURL(), DataDir: cfg.DataDir, RetentionDays: cfg.TaskRetentionDays}, nil
}

// Stats returns task and agent counts.
func (o *Overview) Stats() (relay.Stats, error) {
	svc, ctx, err := o.c.get()
	if err != nil {
		return relay.Stats{}, err
	}
	return svc.Stats(ctx)
}

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
