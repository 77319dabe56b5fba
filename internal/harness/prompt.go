package harness

import (
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// maxEarlierResult bounds an earlier result quoted in the prompt.
const maxEarlierResult = 4000

// Prompt builds the task prompt of one run: who the agent is and who asked,
// the task, its earlier rounds, and how to finish (the final answer, the
// BLOCKED: rule, the relay's MCP server and hand-offs). Blocks are separated
// by blank lines. When in.Resumed, it leads with the requested changes and
// tells the agent that this continues its earlier session. With
// in.RequestToken (a delivery into a session a worker is bound to) it says
// where the task came from and asks for the token at the end of the answer.
func Prompt(in runspec.PromptInput) string {
	t := in.Task
	reports := t.Reports
	last := relay.Report{}
	if len(reports) > 0 {
		last = reports[len(reports)-1]
	}
	changes := last.Kind == relay.ReportChanges
	sender := name(in.Sender, t.SenderSlug)
	var blocks []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			blocks = append(blocks, s)
		}
	}
	if in.RequestToken != "" {
		add("A new task reached this conversation through the Crosschat relay: the worker bound to this session delivers it here, so use what you already know from the conversation above.")
	}
	if in.Resumed {
		s := "This continues your earlier session of this task: you already worked on it, and your earlier messages are above."
		if changes {
			s += fmt.Sprintf("\n\n%s asked for changes. Changes requested: %s", sender, last.Message)
			reports = reports[:len(reports)-1]
		}
		add(s)
	}
	add(fmt.Sprintf("You are %s (%q), an agent connected to a Crosschat relay. %s (%q) assigned you this task (priority: %s).",
		name(in.Agent, t.RecipientSlug), slugOr(in.Agent.Slug, t.RecipientSlug), sender, slugOr(in.Sender.Slug, t.SenderSlug), priorityWord(t.Priority)))
	if d := strings.TrimSpace(in.Agent.Details); d != "" {
		add("Your role: " + d)
	}
	if in.ParentTitle != "" {
		add(fmt.Sprintf("This task is part of %q, which %s is working on.", in.ParentTitle, sender))
	}
	add("## Task: " + t.Title + "\n\n" + t.Instructions)
	var rounds []string
	for _, r := range reports {
		switch r.Kind {
		case relay.ReportCompleted:
			res := r.Result
			if strings.TrimSpace(res) == "" {
				res = r.Message
			}
			rounds = append(rounds, "- Your earlier result: "+clip(strings.TrimSpace(res), maxEarlierResult))
		case relay.ReportChanges:
			rounds = append(rounds, "- Changes requested: "+r.Message)
		case relay.ReportBlocked:
			rounds = append(rounds, "- You reported a blocker: "+r.Message)
		case relay.ReportProgress:
			if strings.HasPrefix(r.Message, "Requeued by ") {
				rounds = append(rounds, "- "+r.Message)
			}
		}
	}
	if len(rounds) > 0 {
		add("## Earlier rounds of this task\n\n" + strings.Join(rounds, "\n"))
	}
	if changes {
		add(fmt.Sprintf("%s requested changes to your earlier result: your final answer replaces the earlier result, so give the whole answer again, not only what changed.", sender))
	}
	add("## How to finish\n\n" + finish(in, sender))
	if in.RequestToken != "" {
		add(fmt.Sprintf("Request token: %s\nEnd your final answer with this token on a line of its own, so the relay can pair your answer with this request.", in.RequestToken))
	}
	return strings.Join(blocks, "\n\n") + "\n"
}

func finish(in runspec.PromptInput, sender string) string {
	lines := []string{
		fmt.Sprintf("- Work in the current folder and finish the task completely. End with a final answer: what you did, where the outputs are, and anything %s should know. Your final answer is sent to %s as the result of this task.", sender, sender),
	}
	if len(in.ExtraDirs) > 0 {
		lines = append(lines, "- You may also read and write these folders: "+strings.Join(in.ExtraDirs, "; "))
	}
	lines = append(lines, "- If you are blocked on something only a person or another agent can give you, start your final answer with BLOCKED: and say exactly what you need.")
	if s := in.RelayServer; s != "" {
		lines = append(lines, fmt.Sprintf("- The relay's tools are available through the MCP server named %q (tools prefixed mcp__%s__). Use only that server for the relay in this run.", s, s))
		if in.HandOffsLeft > 0 {
			lines = append(lines, fmt.Sprintf("- To hand a part of the work to another agent, find one with list_agents and delegate with post_task (%s of hand-offs left below this task).", plural(in.HandOffsLeft, "level")))
		} else {
			lines = append(lines, "- No more hand-offs are allowed: do not post tasks to other agents. Do the work yourself, or answer BLOCKED: with what you need.")
		}
		lines = append(lines, "- To ask for fixes to a task you posted, use request_changes on that task.")
		lines = append(lines, "- Do not call claim_next_task or report_task for this task: the worker reports your final answer for you.")
	} else {
		lines = append(lines, "- The relay's tools are not part of this run; if a Crosschat server shows up among your tools anyway, do not call claim_next_task or report_task for this task: the worker reports your final answer for you.")
	}
	return strings.Join(lines, "\n")
}

func name(a relay.Agent, slug string) string {
	if a.DisplayName != "" {
		return a.DisplayName
	}
	if a.Slug != "" {
		return a.Slug
	}
	return slug
}

func slugOr(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

func priorityWord(p int) string {
	switch p {
	case relay.PriorityLow:
		return "low"
	case relay.PriorityUrgent:
		return "urgent"
	default:
		return "normal"
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// clip cuts s to at most n runes, ending with … when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
