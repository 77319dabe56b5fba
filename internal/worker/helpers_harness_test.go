//go:build unix

package worker_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// testHarness builds custom commands like internal/harness does, and records
// what it was asked.
type testHarness struct {
	mu       sync.Mutex
	requests []runspec.Request
	prompts  []runspec.PromptInput
}

func (h *testHarness) Build(req runspec.Request) (runspec.Spec, error) {
	h.mu.Lock()
	h.requests = append(h.requests, req)
	h.mu.Unlock()
	spec := runspec.Spec{Program: req.Config.Command, Events: runspec.EventsPlain}
	r := strings.NewReplacer("{prompt_file}", req.PromptFile, "{result_file}", req.ResultFile,
		"{mcp_config}", req.MCPConfigFile, "{mcp_url}", req.MCPURL, "{workdir}", req.Config.Workdir)
	for _, a := range req.Config.Args {
		if strings.Contains(a, "{result_file}") {
			spec.ResultFile = req.ResultFile
		}
		if strings.Contains(a, "{mcp_config}") {
			spec.RelayServer = runspec.RunServer
		}
		spec.Args = append(spec.Args, r.Replace(a))
	}
	if req.Config.PromptMode == relay.PromptStdin {
		spec.Stdin = req.Prompt
	}
	return spec, nil
}

func (h *testHarness) Parser(string) runspec.StreamParser { return &plainParser{} }

func (h *testHarness) Prompt(in runspec.PromptInput) string {
	h.mu.Lock()
	h.prompts = append(h.prompts, in)
	h.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s.\n\n## Task: %s\n\n%s\n", in.Agent.DisplayName, in.Task.Title, in.Task.Instructions)
	if in.RequestToken != "" {
		fmt.Fprintf(&b, "\nRequest token: %s\n", in.RequestToken)
	}
	for _, r := range in.Task.Reports {
		if r.Kind == relay.ReportChanges {
			fmt.Fprintf(&b, "\nChanges requested: %s\n", r.Message)
		}
	}
	return b.String()
}

func (h *testHarness) Name(id string) string {
	if id == relay.HarnessCustom {
		return "harness"
	}
	return id
}

func (h *testHarness) lastRequest(t *testing.T) (runspec.Request, runspec.PromptInput) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.requests) == 0 || len(h.prompts) == 0 {
		t.Fatal("the harness was never asked")
	}
	return h.requests[len(h.requests)-1], h.prompts[len(h.prompts)-1]
}

// plainParser makes each line an output step and remembers "session:<id>"
// and "failure:<the CLI's own error>".
type plainParser struct{ session, failure string }

func (p *plainParser) Line(line string) []relay.ActivityEntry {
	if s, ok := strings.CutPrefix(line, "session:"); ok {
		p.session = s
	}
	if s, ok := strings.CutPrefix(line, "failure:"); ok {
		p.failure = s
	}
	if strings.TrimSpace(line) == "" {
		return nil
	}
	return []relay.ActivityEntry{{Kind: relay.StepOutput, Text: line}}
}
func (p *plainParser) Answer() string    { return "" }
func (p *plainParser) Failure() string   { return p.failure }
func (p *plainParser) SessionID() string { return p.session }
