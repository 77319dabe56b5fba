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
		// A message Claude Code wrote itself in the model's place, for an
		// error ("Not logged in · Please run /login", with "error":
		// "authentication_failed"), is an error step and the turn's
		// failure unless the model answers after it.
		code := str(m, "error")
		for _, b := range arr(obj(m, "message"), "content") {
			if e, ok := p.block(b); ok {
				if code != "" && e.Kind == relay.StepMessage {
					e.Kind, e.Status = relay.StepError, relay.StepFailed
				}
				out = append(out, e)
			}
		}
		if code != "" {
			p.failure = claudeFailure(messageText(obj(m, "message")), code)
		} else if messageText(obj(m, "message")) != "" {
			p.failure = ""
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
			if sub == "" || sub == "success" { // is_error with subtype success: not logged in
				sub = "error"
			}
			e := relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed, Text: "Claude Code stopped: " + sub}
			if isErr {
				e.Detail = strings.TrimSpace(str(m, "result"))
			}
			out = append(out, e)
			// The result says the turn failed: its text is Claude Code's
			// error, not an answer.
			p.failure = strings.TrimSpace(str(m, "result"))
			if p.failure == "" {
				p.failure = "Claude Code stopped: " + sub
			}
		} else {
			p.failure = ""
		}
	}
	return out
}

// messageText is the text blocks of a message, joined and trimmed.
func messageText(msg map[string]any) string {
	var parts []string
	for _, b := range arr(msg, "content") {
		if bo, ok := b.(map[string]any); ok && str(bo, "type") == "text" {
			if t := strings.TrimSpace(str(bo, "text")); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// claudeFailure is the cause of a message Claude Code wrote for its own
// error: its text, else its error code.
func claudeFailure(text, code string) string {
	if text != "" {
		return text
	}
	return "Claude Code failed: " + code
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
