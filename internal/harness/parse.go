package harness

import (
	"encoding/json"
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
func (*plainParser) Failure() string   { return "" }
func (*plainParser) SessionID() string { return "" }

// streamed is what a JSON stream parser remembers across lines: the
// agent's final message, the CLI's own error reported instead of one, and
// the CLI's session id.
type streamed struct {
	answer, failure, session string
}

func (s *streamed) Answer() string    { return s.answer }
func (s *streamed) Failure() string   { return s.failure }
func (s *streamed) SessionID() string { return s.session }

// joinLines joins line(o) for each object o of m's array key, one a line,
// leaving out empty ones.
func joinLines(m map[string]any, key string, line func(o map[string]any) string) string {
	var lines []string
	for _, v := range arr(m, key) {
		o, _ := v.(map[string]any)
		if l := line(o); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

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
