package app

import (
	"context"
	"runtime"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// harnessAdapter adapts internal/harness to the worker's Harness. It reads
// each preset program's version once per build of the program, so a run
// of a version outside the tested range says so once in its run log.
type harnessAdapter struct {
	versions *harness.VersionCache
}

func newHarnessAdapter() harnessAdapter {
	return harnessAdapter{versions: &harness.VersionCache{Env: harness.SystemEnv()}}
}

func (a harnessAdapter) Build(req runspec.Request) (runspec.Spec, error) {
	spec, err := harness.Build(req, runtime.GOOS)
	if err != nil || a.versions == nil || req.Prompt == "" {
		// The worker builds twice, the first time without the prompt:
		// the note goes on the real one only.
		return spec, err
	}
	if note := a.versions.Note(context.Background(), req.Config.Harness, req.Config.Command); note != "" {
		spec.Notes = append(spec.Notes, note)
	}
	return spec, nil
}
func (harnessAdapter) Parser(events string) runspec.StreamParser { return harness.NewParser(events) }
func (harnessAdapter) Prompt(in runspec.PromptInput) string      { return harness.Prompt(in) }
func (harnessAdapter) Name(id string) string {
	if p, ok := harness.Lookup(id); ok && id != harness.Custom {
		return p.Name
	}
	return "Your program"
}
