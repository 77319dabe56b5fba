package harness_test

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

func promptInput() runspec.PromptInput {
	return runspec.PromptInput{
		Task: relay.Task{
			ID: "t_1", SenderSlug: "operator", RecipientSlug: "builder",
			Title: "Draw a map", Instructions: "Draw a map of the harbour as map.png.\nMark the lighthouse.",
			Priority: relay.PriorityNormal, Status: relay.StatusClaimed,
		},
		Agent:        relay.Agent{Slug: "builder", DisplayName: "Builder", Details: "Draws maps and diagrams."},
		Sender:       relay.Agent{Slug: "operator", DisplayName: "Ada"},
		HandOffsLeft: 3,
		RelayServer:  "crosschat-run",
	}
}

// Ensure the prompt's structure and the phrases the upstream tests assert,
// for each kind of round.
func TestPrompt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*runspec.PromptInput)
		has   []string
		lacks []string
	}{
		{"first round", func(in *runspec.PromptInput) {}, []string{
			`You are Builder ("builder"), an agent connected to a Crosschat relay. Ada ("operator") assigned you this task (priority: normal).`,
			"Your role: Draws maps and diagrams.", "## Task: Draw a map\n\nDraw a map of the harbour as map.png.\nMark the lighthouse.",
			"## How to finish", "BLOCKED:", `MCP server named "crosschat-run"`, "mcp__crosschat-run__", "list_agents", "post_task",
			"request_changes", "claim_next_task", "report_task",
		}, []string{"## Earlier rounds", "replaces the earlier result", "do not post tasks to other agents", "continues your earlier session"}},
		{"urgent with parent and extra dirs", func(in *runspec.PromptInput) {
			in.Task.Priority = relay.PriorityUrgent
			in.ParentTitle = "Plan the harbour festival"
			in.ExtraDirs = []string{"/srv/assets", "/srv/shared"}
		}, []string{"priority: urgent", `part of "Plan the harbour festival"`, "/srv/assets; /srv/shared"}, nil},
		{"changes requested", func(in *runspec.PromptInput) {
			in.Task.Priority = relay.PriorityLow
			in.Task.Reports = []relay.Report{
				{Kind: relay.ReportProgress, Message: "Halfway there."},
				{Kind: relay.ReportCompleted, Message: "Map drawn.", Result: "map.png in the work folder."},
				{Kind: relay.ReportChanges, Message: "Add the ferry route."},
			}
		}, []string{"priority: low", "## Earlier rounds of this task", "Your earlier result: map.png in the work folder.",
			"Changes requested: Add the ferry route.", "your final answer replaces the earlier result"}, []string{"Halfway there."}},
		{"blocked history", func(in *runspec.PromptInput) {
			in.Task.Reports = []relay.Report{
				{Kind: relay.ReportBlocked, Message: "I need the harbour's outline."},
				{Kind: relay.ReportProgress, Message: "Requeued by operator: the outline is in /srv/assets."},
			}
		}, []string{"You reported a blocker: I need the harbour's outline.", "- Requeued by operator: the outline is in /srv/assets."},
			[]string{"replaces the earlier result"}},
		{"zero hand-offs", func(in *runspec.PromptInput) { in.HandOffsLeft = 0 },
			[]string{"do not post tasks to other agents", "request_changes"}, []string{"delegate with post_task"}},
		{"no relay tools", func(in *runspec.PromptInput) { in.RelayServer = ""; in.Agent.Details = "" },
			[]string{"BLOCKED:", "claim_next_task"}, []string{"MCP server named", "post_task", "Your role:"}},
		{"resumed", func(in *runspec.PromptInput) {
			in.Resumed = true
			in.Task.Reports = []relay.Report{
				{Kind: relay.ReportCompleted, Message: "Map drawn.", Result: strings.Repeat("x", 5000)},
				{Kind: relay.ReportChanges, Message: "Add the ferry route."},
			}
		}, []string{"This continues your earlier session", "Changes requested: Add the ferry route.", "your final answer replaces the earlier result", strings.Repeat("x", 3999) + "…"},
			[]string{strings.Repeat("x", 4001)}},
		{"session delivery", func(in *runspec.PromptInput) { in.RequestToken = "crosschat-req-0123456789abcdef" },
			[]string{"through the Crosschat relay", "Request token: crosschat-req-0123456789abcdef\nEnd your final answer with this token"},
			[]string{"This continues your earlier session"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := promptInput()
			tc.edit(&in)
			got := harness.Prompt(in)
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("prompt lacks %q", s)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(got, s) {
					t.Errorf("prompt has %q", s)
				}
			}
			if strings.Contains(got, "\n\n\n") {
				t.Error("prompt has an empty block")
			}
			golden(t, "prompt/"+strings.ReplaceAll(tc.name, " ", "-")+".golden", []byte(got))
		})
	}
}

// Ensure a resumed prompt leads with the requested changes.
func TestPromptResumedLeadsWithChanges(t *testing.T) {
	in := promptInput()
	in.Resumed = true
	in.Task.Reports = []relay.Report{{Kind: relay.ReportCompleted, Message: "Done."}, {Kind: relay.ReportChanges, Message: "Add the ferry route."}}
	got := harness.Prompt(in)
	first, _, _ := strings.Cut(got, "## Task:")
	if !strings.Contains(first, "Changes requested: Add the ferry route.") || !strings.HasPrefix(got, "This continues your earlier session") {
		t.Errorf("resumed prompt does not lead with the changes:\n%s", got)
	}
	if strings.Count(got, "Add the ferry route.") != 1 {
		t.Errorf("the requested change is repeated:\n%s", got)
	}
}
