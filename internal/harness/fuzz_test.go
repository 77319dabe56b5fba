package harness_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// FuzzParsers feeds arbitrary output lines to every parser: none may panic,
// and every step must have a kind.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"mcp__x__y","input":{"title":"t"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ok"}]}]}}`,
		`{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"bash -lc 'x'","exit_code":2}}`,
		`{"type":"tool_use","tool_name":"mcp_crosschat_list_agents","tool_id":"t","parameters":{}}`,
		`{"type":"message","role":"assistant","content":"hi","delta":true}`,
		"plain text", "", "{", `{"type":null}`,
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, events := range []string{runspec.EventsPlain, runspec.EventsClaudeStream, runspec.EventsCodexJSON, runspec.EventsGeminiStream} {
			p := harness.NewParser(events)
			for _, line := range []string{a, b, a} {
				for _, e := range p.Line(line) {
					if e.Kind == "" {
						t.Fatalf("%s: step without kind from %q", events, line)
					}
				}
			}
			_, _ = p.Answer(), p.SessionID()
		}
		_ = harness.UnwrapShell(a)
	})
}
