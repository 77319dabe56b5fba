package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The fake model's script: a request's turn, and the step it answers with.

// item is one entry of a conversation, whatever the API.
type item struct {
	role string // "user" or "assistant"
	kind string // "text", "call" or "result"
	name string // the tool of a call or result
	text string
}

// turn is the parsed main-loop request.
type turn struct {
	tools []string
	items []item
	// deferred are MCP tools the request names but does not send (their
	// schemas load through search, the ToolSearch tool).
	deferred []string
	search   string
}

// ToolSearch is Claude Code's tool that loads deferred tools (2.1.332 and
// later defer MCP tools behind it unless their server is "alwaysLoad").
// Called with {"query": "select:<tool>"}, its result is a tool_reference
// and the next request sends that tool's schema in tools[].
const ToolSearch = "ToolSearch"

// deferredName matches an MCP tool name as Claude Code writes it.
var deferredName = regexp.MustCompile(`mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_]+`)

// findDeferred lists the MCP tool names the body mentions that are not
// among tools (Claude Code names deferred tools in a system message).
func findDeferred(body string, tools []string) []string {
	var out []string
	for _, n := range deferredName.FindAllString(body, -1) {
		if !slices.Contains(tools, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// step is the fake model's answer: some text and/or one tool call.
type step struct {
	text string
	tool string         // the name to call, as the API offered it
	args map[string]any // its arguments
	// namespace is the Responses namespace of an MCP tool.
	namespace string
	// hold: send the answer only after Release (session script).
	hold bool
}

// next decides the answer to a main-loop request and records what it shows.
func (f *FakeModel) next(t turn, body string) step {
	s := f.script
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen.ToolsOffered = t.tools
	f.seen.LastBody = body
	if s.Session {
		return f.sessionStep(t)
	}

	// The round starts at the last user text of the request-changes prompt.
	start := -1
	for i, it := range t.items {
		if it.role == "user" && it.kind == "text" && strings.Contains(it.text, ChangesMarker) {
			start = i
		}
	}
	if start >= 0 {
		var finals, results int
		for _, it := range t.items[:start] {
			if it.role == "assistant" && it.kind == "text" && strings.Contains(it.text, FinalPrefix+s.Marker) {
				finals++
			}
			if it.kind == "result" {
				results++
			}
		}
		f.seen.Round2 = true
		f.seen.Round2History = finals > 0 && results > 0
		f.seen.Round2Detail = fmt.Sprintf("before the changes prompt: %d assistant message(s) with %q, %d tool result(s), %d item(s) in all",
			finals, FinalPrefix+s.Marker, results, start)
		verdict := "history=missing"
		if f.seen.Round2History {
			verdict = "history=ok"
		}
		return step{text: Round2Prefix + s.Marker + " " + verdict}
	}

	// First round: one step per tool result already in the request
	// (ToolSearch's own results load tools; they are no step).
	var results []item
	for _, it := range t.items {
		if it.kind == "result" && it.name != ToolSearch {
			results = append(results, it)
		}
	}
	if len(t.deferred) > 0 && f.seen.Deferred == nil {
		f.seen.Deferred = t.deferred
	}
	list, post, ns := f.mcpTools(append(slices.Clone(t.tools), t.deferred...))
	f.seen.MCPOffered = list != ""
	var plan []step
	if list != "" {
		plan = append(plan, step{tool: list, namespace: ns, args: map[string]any{"includeOffline": true}})
	}
	if post != "" {
		plan = append(plan, step{tool: post, namespace: ns, args: map[string]any{
			"recipientSlug": s.HandOffTo,
			"title":         "Review " + s.Marker,
			"instructions":  "Review " + s.File + " for " + s.Marker + ".",
		}})
	}
	if s.Command != "" {
		plan = append(plan, f.commandStep())
	}
	plan = append(plan, f.fileStep())
	labels := make([]string, 0, len(plan))
	for _, p := range plan {
		labels = append(labels, p.label())
	}
	for i, r := range results {
		if i < len(labels) {
			f.seen.Results[labels[i]] = r.text
		}
	}
	if len(results) < len(plan) {
		next := plan[len(results)]
		if t.search != "" && slices.Contains(t.deferred, next.tool) {
			// Not loaded yet: load it through ToolSearch first.
			q := "select:" + next.tool
			f.seen.ToolSearches = append(f.seen.ToolSearches, q)
			return step{tool: t.search, args: map[string]any{"query": q, "max_results": 5}}
		}
		return next
	}
	return step{text: FinalPrefix + s.Marker + ": wrote " + s.File + " and handed the review to " + s.HandOffTo + "."}
}

// label names a step in Seen.Results.
func (s step) label() string {
	switch {
	case strings.HasSuffix(s.tool, "list_agents"):
		return "list_agents"
	case strings.HasSuffix(s.tool, "post_task"):
		return "post_task"
	case s.tool == "exec_command" && s.args["cmd"] != nil && strings.HasPrefix(fmt.Sprint(s.args["cmd"]), "apply_patch"):
		return "file"
	case s.tool == "exec_command":
		return "command"
	}
	return "file"
}

// mcpTools finds the relay's list_agents and post_task among the offered
// tools, and (Responses) their namespace.
func (f *FakeModel) mcpTools(tools []string) (list, post, namespace string) {
	for _, t := range tools {
		ns, name, nested := strings.Cut(t, "/")
		if !nested {
			ns, name = "", t
		}
		mcp := nested || strings.HasPrefix(name, "mcp_")
		if !mcp {
			continue
		}
		switch {
		case strings.HasSuffix(name, "list_agents"):
			list, namespace = name, ns
		case strings.HasSuffix(name, "post_task"):
			post = name
		}
	}
	return list, post, namespace
}

func (f *FakeModel) commandStep() step {
	return step{tool: "exec_command", args: map[string]any{"cmd": f.script.Command, "workdir": f.script.Workdir}}
}

func (f *FakeModel) fileStep() step {
	s := f.script
	content := "Reviewed by the fake model for " + s.Marker + ".\n"
	path := strings.TrimRight(s.Workdir, "/") + "/" + s.File
	switch f.api {
	case Anthropic:
		return step{tool: "Write", args: map[string]any{"file_path": path, "content": content}}
	case Responses:
		patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + s.File + "\n+" + strings.TrimSuffix(content, "\n") + "\n*** End Patch\nEOF\n"
		return step{tool: "exec_command", args: map[string]any{"cmd": patch, "workdir": s.Workdir}}
	default:
		return step{tool: "write_file", args: map[string]any{"file_path": path, "content": content}}
	}
}
