package app

import "github.com/crosschat/crosschat-relay/internal/relay"

// WorkerLimits are the bounds relay.WorkerConfig.Validate enforces on a
// worker's settings and the defaults it fills in, so the dashboard's forms
// check them before a round trip without keeping a copy of their own.
type WorkerLimits struct {
	DefaultTimeoutMinutes int `json:"defaultTimeoutMinutes"`
	MaxTimeoutMinutes     int `json:"maxTimeoutMinutes"`
	DefaultRunsPerHour    int `json:"defaultRunsPerHour"`
	MaxRunsPerHour        int `json:"maxRunsPerHour"`
	MaxArgs               int `json:"maxArgs"`
	MaxExtraDirs          int `json:"maxExtraDirs"`
	MaxSenders            int `json:"maxSenders"`
	MaxEnv                int `json:"maxEnv"`
	MaxAllowPaths         int `json:"maxAllowPaths"`
	// EnvNamePattern is the regular expression an environment variable name
	// must match (a subset of the syntax Go and JavaScript share).
	EnvNamePattern string `json:"envNamePattern"`
}

// Limits returns the worker limits. They are the relay's own constants, so
// it answers before the relay has started and from any signed-in browser.
func (w *Workers) Limits() WorkerLimits {
	return WorkerLimits{
		DefaultTimeoutMinutes: relay.DefaultWorkerTimeoutMinutes,
		MaxTimeoutMinutes:     relay.MaxWorkerTimeoutMinutes,
		DefaultRunsPerHour:    relay.DefaultRunsPerHour,
		MaxRunsPerHour:        relay.MaxRunsPerHour,
		MaxArgs:               relay.MaxWorkerArgs,
		MaxExtraDirs:          relay.MaxWorkerExtraDirs,
		MaxSenders:            relay.MaxWorkerSenders,
		MaxEnv:                relay.MaxWorkerEnv,
		MaxAllowPaths:         relay.MaxWorkerAllowPaths,
		EnvNamePattern:        relay.EnvNamePattern,
	}
}
