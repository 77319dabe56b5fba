package harness

import (
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// geminiParser parses Gemini CLI's --output-format stream-json.
type geminiParser struct {
	streamed
	// delta collects the assistant's streamed message of the current turn.
	delta strings.Builder
	tools map[string]relay.ActivityEntry
}

// Answer is the last assistant message, including one still streaming
// when the output ended without a closing event.
func (p *geminiParser) Answer() string {
	if t := strings.TrimSpace(p.delta.String()); t != "" {
		return t
	}
	return strings.TrimSpace(p.answer)
}

func (p *geminiParser) flush() []relay.ActivityEntry {
	t := strings.TrimSpace(p.delta.String())
	p.delta.Reset()
	if t == "" {
		return nil
	}
	p.answer = t
	return []relay.ActivityEntry{{Kind: relay.StepMessage, Text: t}}
}

func (p *geminiParser) Line(line string) []relay.ActivityEntry {
	m, ok := object(line)
	if !ok {
		return append(p.flush(), nonJSON(line)...)
	}
	if s := str(m, "session_id"); s != "" {
		p.session = s
	}
	switch str(m, "type") {
	case "init":
		return nil
	case "message":
		if str(m, "role") != "assistant" {
			return nil
		}
		c := str(m, "content")
		if d, _ := m["delta"].(bool); d {
			p.delta.WriteString(c)
			return nil
		}
		out := p.flush()
		if t := strings.TrimSpace(c); t != "" {
			p.answer = t
			out = append(out, relay.ActivityEntry{Kind: relay.StepMessage, Text: t})
		}
		return out
	case "tool_use":
		out := p.flush()
		name := str(m, "tool_name")
		params := obj(m, "parameters")
		e := relay.ActivityEntry{Status: relay.StepRunning, Ref: str(m, "tool_id")}
		switch name {
		case "run_shell_command":
			e.Kind = relay.StepCommand
			e.Text = str(params, "command")
			if e.Text == "" {
				e.Text = name
			}
		case "write_file", "replace", "edit":
			e.Kind = relay.StepFile
			verb := "Edit"
			if name == "write_file" {
				verb = "Write"
			}
			e.Text = strings.TrimSpace(verb + " " + str(params, "file_path"))
		default:
			e.Kind = relay.StepTool
			e.Text = geminiLabel(name)
			if s := subject(params); s != "" {
				e.Text += ": " + s
			} else if s := str(params, "absolute_path"); s != "" {
				e.Text += ": " + s
			} else if s := str(params, "dir_path"); s != "" {
				e.Text += ": " + s
			}
		}
		if e.Ref != "" {
			p.tools[e.Ref] = e
		}
		return append(out, e)
	case "tool_result":
		out := p.flush()
		id := str(m, "tool_id")
		e, ok := p.tools[id]
		if !ok {
			e = relay.ActivityEntry{Kind: relay.StepTool, Text: "Tool", Ref: id}
		}
		delete(p.tools, id)
		e.Status = relay.StepOK
		if st := str(m, "status"); st != "" && st != "success" {
			e.Status = relay.StepFailed
		}
		e.Detail = strings.TrimRight(str(m, "output"), " \t\r\n")
		if msg := str(obj(m, "error"), "message"); msg != "" && e.Detail == "" {
			e.Detail = msg
		}
		return append(out, e)
	case "error":
		out := p.flush()
		msg := str(m, "message")
		if msg == "" {
			msg = "Gemini CLI reported an error."
		}
		sev := str(m, "severity")
		e := relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed, Text: msg}
		if sev == "warning" {
			e.Status = ""
		}
		return append(out, e)
	case "result":
		out := p.flush()
		p.failure = ""
		if st := str(m, "status"); st != "" && st != "success" {
			msg := str(obj(m, "error"), "message")
			out = append(out, relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text: "Gemini CLI stopped: " + st, Detail: msg})
			// The run failed: Gemini CLI's error, not an answer.
			p.failure = strings.TrimSpace(msg)
			if p.failure == "" {
				p.failure = "Gemini CLI stopped: " + st
			}
		}
		return out
	}
	return nil
}

// geminiLabel names Gemini's MCP tools (mcp_<server>_<tool>) "<server> ›
// <tool>"; a run's own server, named runspec.RunServer and a random suffix
// (runspec.Request's Server), is labelled runspec.RunServer.
func geminiLabel(name string) string {
	if rest, ok := strings.CutPrefix(name, "mcp_"); ok {
		if own, ok := strings.CutPrefix(rest, runspec.RunServer+"-"); ok {
			if _, tool, ok := strings.Cut(own, "_"); ok && tool != "" {
				rest = runspec.RunServer + "_" + tool
			}
		}
		for _, s := range []string{runspec.RunServer, UserServer} {
			if tool, ok := strings.CutPrefix(rest, s+"_"); ok && tool != "" {
				return s + " › " + tool
			}
		}
	}
	return toolLabel(name)
}
