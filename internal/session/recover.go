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

// FailedError means the turn ended in the CLI's own error, not an answer:
// the last message after the request is one the CLI wrote itself in the
// model's place (Claude Code's "Not logged in · Please run /login", an API
// error it gave up on). Cause is that message; Text what the turn wrote
// before it ("" for none).
type FailedError struct{ Cause, Text string }

func (e *FailedError) Error() string { return "the CLI failed: " + e.Cause }

// Failure is the cause, for callers that do not import this package.
func (e *FailedError) Failure() string { return e.Cause }

// Recover returns the assistant text a session wrote after the user
// message that carries token (the request token of a delivered task) and
// before the next prompt: what to report when the CLI died before it
// printed its answer. Text written before the request, or after a later
// prompt (records holding only tool results belong to the same turn), is
// never returned. Records stamped before since (the turn's claim; zero:
// none) are ignored, so a copy of the request planted earlier does not
// count. When a later prompt follows the request the error is a
// *MovedOnError carrying the text written before it; when the turn ended
// in the CLI's own error (its last message is one the CLI wrote for an
// error) it is a *FailedError: that message is never taken for an answer.
func Recover(s Session, token string, since time.Time) (string, error) {
	if token == "" {
		return "", errors.New("recover: a request token is required")
	}
	var (
		seen, moved bool
		parts       []string
		failure     string // the CLI's error, while no answer follows it
	)
	for _, path := range s.files() { // a Codex thread's rollouts, oldest first
		err := eachLine(context.Background(), path, func(line []byte) bool {
			if before(line, since) {
				return true
			}
			m := transcriptMessage(s.Tool, line)
			switch {
			case m.role == "user" && strings.Contains(m.text, token):
				seen, moved, parts, failure = true, false, nil, "" // a later delivery of the same request wins
			case seen && m.role == "user" && m.prompt:
				moved = true
			case seen && !moved && m.role == "assistant" && m.cliError:
				failure = strings.TrimSpace(m.text)
				if failure == "" {
					failure = "the CLI wrote an error in place of an answer"
				}
			case seen && !moved && m.role == "assistant" && strings.TrimSpace(m.text) != "":
				parts, failure = append(parts, strings.TrimSpace(m.text)), ""
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
	case failure != "":
		return "", &FailedError{Cause: failure, Text: text}
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

// message is one message line of a transcript.
type message struct {
	role, text string
	// prompt tells a user message that is a prompt: text a person or a
	// sender wrote, not only tool results or records the CLI adds (meta
	// records, its own context in <tags>).
	prompt bool
	// cliError tells an assistant message the CLI wrote itself for its own
	// error (Claude Code marks it isApiErrorMessage, with an error code).
	cliError bool
}

// transcriptMessage reads a message line (role "" when the line is not a
// message).
func transcriptMessage(tool string, line []byte) message {
	switch tool {
	case ClaudeCode:
		var r claudeRecord
		if json.Unmarshal(line, &r) != nil || (r.Type != "user" && r.Type != "assistant") {
			return message{}
		}
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r.Message, &m) != nil {
			return message{}
		}
		out := message{role: r.Type, prompt: r.Type == "user" && !r.IsMeta && strings.TrimSpace(claudeText(r.Message)) != "",
			cliError: r.Type == "assistant" && (r.IsAPIErrorMessage || r.Error != "")}
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			out.text = str
			return out
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			return message{}
		}
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		out.text = strings.Join(parts, "\n")
		return out
	case Codex:
		var l codexLine
		if json.Unmarshal(line, &l) != nil || l.Type != "response_item" {
			return message{}
		}
		var m codexMessage
		if json.Unmarshal(l.Payload, &m) != nil || m.Type != "message" {
			return message{}
		}
		out := message{role: m.Role}
		var parts []string
		for _, c := range m.Content {
			if c.Type == "input_text" || c.Type == "output_text" {
				parts = append(parts, c.Text)
			}
			t := strings.TrimSpace(c.Text)
			if m.Role == "user" && c.Type == "input_text" && t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "# AGENTS.md") {
				out.prompt = true
			}
		}
		out.text = strings.Join(parts, "\n")
		return out
	}
	return message{}
}
