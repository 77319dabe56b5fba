package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNoAnswer means the transcript holds no answer after the request.
var ErrNoAnswer = errors.New("no answer after the request in the transcript")

// Recover returns the assistant text a session wrote after the user
// message that carries token (the request token of a delivered task): what
// to report when the CLI died before it printed its answer. Text written
// before the request is never returned.
func Recover(s Session, token string) (string, error) {
	if token == "" {
		return "", errors.New("recover: a request token is required")
	}
	var (
		seen  bool
		parts []string
	)
	for _, path := range s.files() { // a Codex thread's rollouts, oldest first
		err := eachLine(path, func(line []byte) bool {
			role, text := transcriptMessage(s.Tool, line)
			switch {
			case role == "user" && strings.Contains(text, token):
				seen, parts = true, nil // a later delivery of the same request wins
			case seen && role == "assistant" && strings.TrimSpace(text) != "":
				parts = append(parts, strings.TrimSpace(text))
			}
			return true
		})
		if err != nil {
			return "", fmt.Errorf("recover from %s: %w", path, err)
		}
	}
	if !seen || len(parts) == 0 {
		return "", ErrNoAnswer
	}
	return strings.Join(parts, "\n\n"), nil
}

// transcriptMessage returns the role and text of a message line ("" when
// the line is not a message).
func transcriptMessage(tool string, line []byte) (role, text string) {
	switch tool {
	case ClaudeCode:
		var r claudeRecord
		if json.Unmarshal(line, &r) != nil || (r.Type != "user" && r.Type != "assistant") {
			return "", ""
		}
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r.Message, &m) != nil {
			return "", ""
		}
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			return r.Type, str
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			return "", ""
		}
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return r.Type, strings.Join(parts, "\n")
	case Codex:
		var l codexLine
		if json.Unmarshal(line, &l) != nil || l.Type != "response_item" {
			return "", ""
		}
		var m codexMessage
		if json.Unmarshal(l.Payload, &m) != nil || m.Type != "message" {
			return "", ""
		}
		var parts []string
		for _, c := range m.Content {
			if c.Type == "input_text" || c.Type == "output_text" {
				parts = append(parts, c.Text)
			}
		}
		return m.Role, strings.Join(parts, "\n")
	}
	return "", ""
}
