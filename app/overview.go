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
	return o.InfoAt("")
}

// InfoAt is Info for a dashboard reached at origin ("" when unknown): the
// addresses are the ones to name to agents from there (see address.go).
func (o *Overview) InfoAt(origin string) (Info, error) {
	svc, _, err := o.c.get()
	if err != nil {
		return Info{}, err
	}
	cfg := o.c.config()
	base := o.c.reachedURL(origin)
	return Info{Version: o.c.version, OperatorSlug: svc.OperatorSlug(), DashboardURL: base + "/", MCPURL: base + "/mcp", DataDir: cfg.DataDir, RetentionDays: cfg.TaskRetentionDays}, nil
}

// Stats returns task and agent counts.
func (o *Overview) Stats() (relay.Stats, error) {
	svc, ctx, err := o.c.get()
	if err != nil {
		return relay.Stats{}, err
	}
	return svc.Stats(ctx)
}
