package app

import (
	"runtime"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// harnessAdapter adapts internal/harness to the worker's Harness.
type harnessAdapter struct{}

func (harnessAdapter) Build(req runspec.Request) (runspec.Spec, error) {
	return harness.Build(req, runtime.GOOS)
}
func (harnessAdapter) Parser(events string) runspec.StreamParser { return harness.NewParser(events) }
func (harnessAdapter) Prompt(in runspec.PromptInput) string      { return harness.Prompt(in) }
func (harnessAdapter) Name(id string) string {
	if p, ok := harness.Lookup(id); ok && id != harness.Custom {
		return p.Name
	}
	return "Your program"
}
