package harness

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// NewParser returns a fresh parser for an output format (relay.Events*).
// Unknown formats are parsed as plain text.
func NewParser(events string) runspec.StreamParser {
	switch events {
	case runspec.EventsClaudeStream:
		return &claudeParser{tools: map[string]relay.ActivityEntry{}}
	case runspec.EventsCodexJSON:
		return &codexParser{}
	case runspec.EventsGeminiStream:
		return &geminiParser{tools: map[string]relay.ActivityEntry{}}
	default:
		return &plainParser{}
	}
}

// plainParser makes each non-empty line an output step; stdout itself is the answer.
type plainParser struct{}

func (*plainParser) Line(line string) []relay.ActivityEntry {
	line = strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(line) == "" {
		return nil
	}
	return []relay.ActivityEntry{{Kind: relay.StepOutput, Text: line}}
}
func (*plainParser) Answer() string    { return "" }
func (*plainParser) SessionID() string { return "" }

// object decodes a JSON object line; ok is false for anything else.
func object(line string) (map[string]any, bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "{") {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// nonJSON turns a line that is not a JSON object into an output step.
func nonJSON(line string) []relay.ActivityEntry {
	return (&plainParser{}).Line(line)
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

func arr(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

// text returns a tool result's text: a string, or the text parts of a
// content array joined by newlines, trailing whitespace trimmed.
func text(v any) string {
	switch t := v.(type) {
	case string:
		return strings.TrimRight(t, " \t\r\n")
	case []any:
		var parts []string
		for _, p := range t {
			if po, ok := p.(map[string]any); ok {
				if s, ok := po["text"].(string); ok {
					parts = append(parts, s)
				}
			} else if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.TrimRight(strings.Join(parts, "\n"), " \t\r\n")
	case map[string]any:
		if c, ok := t["content"]; ok {
			return text(c)
		}
		if s, ok := t["text"].(string); ok {
			return strings.TrimRight(s, " \t\r\n")
		}
	}
	return ""
}

// toolLabel names an MCP tool "<server> › <tool>", other tools by name.
func toolLabel(name string) string {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if server, tool, ok := strings.Cut(rest, "__"); ok && server != "" && tool != "" {
			return server + " › " + tool
		}
	}
	return name
}

var subjectKeys = []string{"file_path", "path", "pattern", "url", "query", "title", "description", "taskId"}

func subject(input map[string]any) string {
	for _, k := range subjectKeys {
		if s := strings.TrimSpace(str(input, k)); s != "" {
			return s
		}
	}
	return ""
}

// claudeParser parses Claude Code's stream-json output.
type claudeParser struct {
	answer, session string
	tools           map[string]relay.ActivityEntry
}

func (p *claudeParser) Answer() string    { return p.answer }
func (p *claudeParser) SessionID() string { return p.session }

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

// codexParser parses the JSONL of codex exec --json.
type codexParser struct {
	answer, session string
}

func (p *codexParser) Answer() string    { return p.answer }
func (p *codexParser) SessionID() string { return p.session }

func (p *codexParser) Line(line string) []relay.ActivityEntry {
	m, ok := object(line)
	if !ok {
		return nonJSON(line)
	}
	typ := str(m, "type")
	switch typ {
	case "thread.started":
		if s := str(m, "thread_id"); s != "" {
			p.session = s
		}
		return nil
	case "turn.failed":
		msg := str(obj(m, "error"), "message")
		if msg == "" {
			msg = "Codex stopped the turn."
		}
		return []relay.ActivityEntry{{Kind: relay.StepError, Status: relay.StepFailed, Text: msg}}
	case "error":
		msg := str(m, "message")
		if msg == "" {
			msg = "Codex reported an error."
		}
		return []relay.ActivityEntry{{Kind: relay.StepError, Status: relay.StepFailed, Text: msg}}
	case "item.started", "item.updated", "item.completed":
	default:
		return nil
	}
	item := obj(m, "item")
	if item == nil {
		return nil
	}
	done := typ == "item.completed"
	status := relay.StepRunning
	switch st := str(item, "status"); {
	case st == "failed" || st == "declined":
		status = relay.StepFailed
	case exitFailed(item["exit_code"]):
		status = relay.StepFailed
	case done || st == "completed":
		status = relay.StepOK
	}
	e := relay.ActivityEntry{Status: status, Ref: str(item, "id")}
	switch str(item, "type") {
	case "agent_message":
		if !done {
			return nil
		}
		t := str(item, "text")
		p.answer = t
		if strings.TrimSpace(t) == "" {
			return nil
		}
		return []relay.ActivityEntry{{Kind: relay.StepMessage, Text: strings.TrimSpace(t), Ref: e.Ref}}
	case "reasoning":
		t := strings.TrimSpace(str(item, "text"))
		if !done || t == "" {
			return nil
		}
		return []relay.ActivityEntry{{Kind: relay.StepThinking, Text: t, Ref: e.Ref}}
	case "command_execution":
		e.Kind = relay.StepCommand
		e.Text = UnwrapShell(str(item, "command"))
		e.Detail = strings.TrimRight(str(item, "aggregated_output"), " \t\r\n")
	case "file_change":
		e.Kind = relay.StepFile
		var lines []string
		for _, c := range arr(item, "changes") {
			co, _ := c.(map[string]any)
			verb := "Updated"
			switch str(co, "kind") {
			case "add":
				verb = "Added"
			case "delete":
				verb = "Deleted"
			}
			if path := str(co, "path"); path != "" {
				lines = append(lines, verb+" "+path)
			}
		}
		e.Text = strings.Join(lines, "\n")
		if e.Text == "" {
			e.Text = "Changed files"
		}
	case "mcp_tool_call":
		e.Kind = relay.StepTool
		e.Text = str(item, "server") + " › " + str(item, "tool")
		if msg := str(obj(item, "error"), "message"); msg != "" {
			e.Detail = msg
		} else if msg := str(item, "error"); msg != "" {
			e.Detail = msg
		} else {
			e.Detail = text(obj(item, "result"))
		}
	case "web_search":
		e.Kind = relay.StepTool
		e.Text = "Web search: " + str(item, "query")
	case "todo_list":
		e.Kind = relay.StepPlan
		var lines []string
		for _, it := range arr(item, "items") {
			io, _ := it.(map[string]any)
			mark := "☐"
			if c, _ := io["completed"].(bool); c {
				mark = "☑"
			}
			lines = append(lines, mark+" "+str(io, "text"))
		}
		e.Text = strings.Join(lines, "\n")
	case "error":
		e.Kind = relay.StepError
		e.Status = relay.StepFailed
		e.Text = str(item, "message")
	default:
		return nil
	}
	return []relay.ActivityEntry{e}
}

func exitFailed(v any) bool {
	n, ok := v.(float64)
	return ok && n != 0
}

// shellWrapper matches a command run through a shell: bash -lc '…',
// powershell.exe -Command '…', cmd /c …
var shellWrapper = regexp.MustCompile(`(?is)^\s*(?:"(?:[^"]*[/\\])?(?:bash|zsh|sh|powershell|pwsh|cmd)(?:\.exe)?"|(?:[^"\s]*[/\\])?(?:bash|zsh|sh|powershell|pwsh|cmd)(?:\.exe)?)(?:\s+-(?:NoProfile|NoLogo|NonInteractive))*\s+(?:-lc|-c|-Command|/c)\s+(.+?)\s*$`)

// UnwrapShell returns the command inside a shell wrapper
// ("/bin/bash -lc 'ls -la'" → "ls -la"), or cmd unchanged.
func UnwrapShell(cmd string) string {
	m := shellWrapper.FindStringSubmatch(cmd)
	if m == nil {
		return cmd
	}
	inner := m[1]
	if len(inner) >= 2 {
		if q := inner[0]; (q == '\'' || q == '"') && inner[len(inner)-1] == q && !strings.ContainsRune(inner[1:len(inner)-1], rune(q)) {
			inner = inner[1 : len(inner)-1]
		}
	}
	return inner
}

// geminiParser parses Gemini CLI's --output-format stream-json.
type geminiParser struct {
	answer, session string
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
func (p *geminiParser) SessionID() string { return p.session }

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
		if st := str(m, "status"); st != "" && st != "success" {
			msg := str(obj(m, "error"), "message")
			out = append(out, relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text: "Gemini CLI stopped: " + st, Detail: msg})
		}
		return out
	}
	return nil
}

// geminiLabel names Gemini's MCP tools (mcp_<server>_<tool>) "<server> › <tool>".
func geminiLabel(name string) string {
	if rest, ok := strings.CutPrefix(name, "mcp_"); ok {
		for _, s := range []string{RunServer, UserServer} {
			if tool, ok := strings.CutPrefix(rest, s+"_"); ok && tool != "" {
				return s + " › " + tool
			}
		}
	}
	return toolLabel(name)
}
