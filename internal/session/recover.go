package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNoAnswer means the transcript holds no answer after the request.
var ErrNoAnswer = errors.New("no answer after the request in the transcript")

// MovedOnError means the session went on after the request: a later
// prompt (the person's own chat, another request) follows it, so what
// the transcript holds after the request may not be its answer. Text is
// the answer written before the session moved on (possibly partial).
type MovedOnError struct{ Text string }

func (e *MovedOnError) Error() string {
	return "the session moved on: a later prompt follows the request in its transcript"
}

// MovedOn marks the error for callers that do not import this package.
func (e *MovedOnError) MovedOn() bool { return true }

// Recover returns the assistant text a session wrote after the user
// message that carries token (the request token of a delivered task) and
// before the next prompt: what to report when the CLI died before it
// printed its answer. Text written before the request, or after a later
// prompt (records holding only tool results belong to the same turn), is
// never returned. Records stamped before since (the turn's claim; zero:
// none) are ignored, so a copy of the request planted earlier does not
// count. When a later prompt follows the request the error is a
// *MovedOnError carrying the text written before it.
func Recover(s Session, token string, since time.Time) (string, error) {
	if token == "" {
		return "", errors.New("recover: a request token is required")
	}
	var (
		seen, moved bool
		parts       []string
	)
	for _, path := range s.files() { // a Codex thread's rollouts, oldest first
		err := eachLine(context.Background(), path, func(line []byte) bool {
			if before(line, since) {
				return true
			}
			role, text, prompt := transcriptMessage(s.Tool, line)
			switch {
			case role == "user" && strings.Contains(text, token):
				seen, moved, parts = true, false, nil // a later delivery of the same request wins
			case seen && role == "user" && prompt:
				moved = true
			case seen && !moved && role == "assistant" && strings.TrimSpace(text) != "":
				parts = append(parts, strings.TrimSpace(text))
			}
			return true
		})
		if err != nil {
			return "", fmt.Errorf("recover from %s: %w", path, err)
		}
	}
	text := strings.Join(parts, "\n\n")
	switch {
	case !seen:
		return "", ErrNoAnswer
	case moved:
		return "", &MovedOnError{Text: text}
	case len(parts) == 0:
		return "", ErrNoAnswer
	}
	return text, nil
}

// recoverSkew is how much earlier than the turn's claim a record may be
// stamped and still count (the CLI's and the relay's clocks are read at
// different moments).
const recoverSkew = time.Second

// before reports whether the record is stamped earlier than since (less
// recoverSkew); a record without a readable time is not.
func before(line []byte, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	var r struct {
		Timestamp string `json:"timestamp"`
	}
	if json.Unmarshal(line, &r) != nil {
		return false
	}
	t := parseTime(r.Timestamp)
	return !t.IsZero() && t.Before(since.Add(-recoverSkew))
}

// transcriptMessage returns the role and text of a message line ("" when
// the line is not a message); prompt tells a user message that is a
// prompt: text a person or a sender wrote, not only tool results or
// records the CLI adds (meta records, its own context in <tags>).
func transcriptMessage(tool string, line []byte) (role, text string, prompt bool) {
	switch tool {
	case ClaudeCode:
		var r claudeRecord
		if json.Unmarshal(line, &r) != nil || (r.Type != "user" && r.Type != "assistant") {
			return "", "", false
		}
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r.Message, &m) != nil {
			return "", "", false
		}
		prompt = r.Type == "user" && !r.IsMeta && strings.TrimSpace(claudeText(r.Message)) != ""
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			return r.Type, str, prompt
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			return "", "", false
		}
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return r.Type, strings.Join(parts, "\n"), prompt
	case Codex:
		var l codexLine
		if json.Unmarshal(line, &l) != nil || l.Type != "response_item" {
			return "", "", false
		}
		var m codexMessage
		if json.Unmarshal(l.Payload, &m) != nil || m.Type != "message" {
			return "", "", false
		}
		var parts []string
		for _, c := range m.Content {
			if c.Type == "input_text" || c.Type == "output_text" {
				parts = append(parts, c.Text)
			}
			t := strings.TrimSpace(c.Text)
			if m.Role == "user" && c.Type == "input_text" && t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "# AGENTS.md") {
				prompt = true
			}
		}
		return m.Role, strings.Join(parts, "\n"), prompt
	}
	return "", "", false
}
