package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// claudeRecord is the part of a Claude Code transcript line we read.
type claudeRecord struct {
	Type        string          `json:"type"`
	SessionID   string          `json:"sessionId"`
	Cwd         string          `json:"cwd"`
	Timestamp   string          `json:"timestamp"`
	CustomTitle string          `json:"customTitle"`
	AITitle     string          `json:"aiTitle"`
	Summary     string          `json:"summary"`
	IsMeta      bool            `json:"isMeta"`
	Message     json.RawMessage `json:"message"`
	// IsAPIErrorMessage and Error mark an assistant message Claude Code
	// wrote itself for an error ("Not logged in · Please run /login",
	// error "authentication_failed").
	IsAPIErrorMessage bool   `json:"isApiErrorMessage"`
	Error             string `json:"error"`
}

// readClaude reads one transcript: the last custom-title is the name, the
// last ai-title (else summary, else the first prompt) the title.
func readClaude(ctx context.Context, path string) (Session, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return Session{}, err
	}
	s := Session{Tool: ClaudeCode, ID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Path: path, LastActive: info.ModTime().UTC()}
	var aiTitle, summary, firstPrompt string
	var last string
	err = eachLine(ctx, path, func(line []byte) bool {
		var r claudeRecord
		if json.Unmarshal(line, &r) != nil {
			return true
		}
		if r.SessionID != "" && r.SessionID != s.ID && r.Type == "custom-title" {
			return true // a title for another session
		}
		if s.Folder == "" && r.Cwd != "" {
			s.Folder = r.Cwd
		}
		if r.Timestamp != "" {
			last = r.Timestamp
		}
		switch r.Type {
		case "custom-title":
			s.Name = cleanLabel(r.CustomTitle)
		case "ai-title":
			aiTitle = cleanLabel(r.AITitle)
		case "summary":
			summary = cleanLabel(r.Summary)
		case "user":
			if firstPrompt == "" && !r.IsMeta {
				firstPrompt = claudeText(r.Message)
			}
		}
		return true
	})
	if err != nil {
		return Session{}, err
	}
	if t := parseTime(last); !t.IsZero() {
		s.LastActive = t
	}
	switch {
	case aiTitle != "":
		s.Title = aiTitle
	case summary != "":
		s.Title = summary
	default:
		s.Title = shortTitle(firstPrompt)
	}
	return s, nil
}

// claudeText is the text of a user message: a string, or its text blocks
// (tool results are not prompts).
func claudeText(raw json.RawMessage) string {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var str string
	if json.Unmarshal(m.Content, &str) == nil {
		if strings.HasPrefix(strings.TrimSpace(str), "<") { // command or hook output, not a prompt
			return ""
		}
		return str
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<") {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, " ")
}
