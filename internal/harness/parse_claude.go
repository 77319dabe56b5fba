package harness

import (
	"fmt"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// claudeParser parses Claude Code's stream-json output.
type claudeParser struct {
	streamed
	tools map[string]relay.ActivityEntry
}

func (p *claudeParser) Line(line string) []relay.ActivityEntry {
	m, ok := object(line)
	if !ok {
		return nonJSON(line)
	}
	if s := str(m, "session_id"); s != "" && (p.session == "" || str(m, "type") == "system" || str(m, "type") == "result") {
		p.session = s
	}
	var out []relay.ActivityEntry
	switch str(m, "type") {
	case "assistant":
		for _, b := range arr(obj(m, "message"), "content") {
			if e, ok := p.block(b); ok {
				out = append(out, e)
			}
		}
	case "user":
		for _, b := range arr(obj(m, "message"), "content") {
			bo, _ := b.(map[string]any)
			if str(bo, "type") != "tool_result" {
				continue
			}
			e, ok := p.tools[str(bo, "tool_use_id")]
			if !ok {
				continue
			}
			delete(p.tools, e.Ref)
			e.Status = relay.StepOK
			if isErr, _ := bo["is_error"].(bool); isErr {
				e.Status = relay.StepFailed
			}
			e.Detail = text(bo["content"])
			out = append(out, e)
		}
	case "result":
		if r, ok := m["result"].(string); ok {
			p.answer = r
		}
		if d := arr(m, "permission_denials"); len(d) > 0 {
			var names []string
			for _, x := range d {
				if xo, ok := x.(map[string]any); ok {
					if n := str(xo, "tool_name"); n != "" {
						names = append(names, toolLabel(n))
					}
				}
			}
			out = append(out, relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text:   fmt.Sprintf("Claude Code refused %s that needed approval.", plural(len(d), "tool call")),
				Detail: strings.Join(names, "\n")})
		}
		isErr, _ := m["is_error"].(bool)
		sub := str(m, "subtype")
		if isErr || (sub != "" && sub != "success") {
			if sub == "" {
				sub = "error"
			}
			e := relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed, Text: "Claude Code stopped: " + sub}
			if isErr {
				e.Detail = strings.TrimSpace(str(m, "result"))
			}
			out = append(out, e)
		}
	}
	return out
}

func (p *claudeParser) block(b any) (relay.ActivityEntry, bool) {
	bo, ok := b.(map[string]any)
	if !ok {
		return relay.ActivityEntry{}, false
	}
	switch str(bo, "type") {
	case "text":
		if t := strings.TrimSpace(str(bo, "text")); t != "" {
			return relay.ActivityEntry{Kind: relay.StepMessage, Text: t}, true
		}
	case "thinking":
		if t := strings.TrimSpace(str(bo, "thinking")); t != "" {
			return relay.ActivityEntry{Kind: relay.StepThinking, Text: t}, true
		}
	case "tool_use":
		name := str(bo, "name")
		input := obj(bo, "input")
		e := relay.ActivityEntry{Status: relay.StepRunning, Ref: str(bo, "id")}
		switch name {
		case "Bash", "PowerShell":
			e.Kind = relay.StepCommand
			e.Text = str(input, "command")
			if e.Text == "" {
				e.Text = name
			}
		case "Edit", "MultiEdit", "Write", "NotebookEdit":
			e.Kind = relay.StepFile
			path := str(input, "file_path")
			if path == "" {
				path = str(input, "notebook_path")
			}
			verb := "Edit"
			if name == "Write" {
				verb = "Write"
			}
			e.Text = strings.TrimSpace(verb + " " + path)
		default:
			e.Kind = relay.StepTool
			e.Text = toolLabel(name)
			if s := subject(input); s != "" {
				e.Text += ": " + s
			}
		}
		if e.Ref != "" {
			p.tools[e.Ref] = e
		}
		return e, true
	}
	return relay.ActivityEntry{}, false
}
