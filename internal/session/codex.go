package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// codexLine is the part of a rollout line we read.
type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// codexMessage is the payload of a "response_item" line that is a message.
type codexMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// codexNames reads session_index.jsonl: the last thread_name per id wins.
func codexNames(ctx context.Context, path string) (map[string]string, error) {
	names := map[string]string{}
	err := eachLine(ctx, path, func(line []byte) bool {
		var e struct {
			ID         string `json:"id"`
			ThreadName string `json:"thread_name"`
		}
		if json.Unmarshal(line, &e) == nil && e.ID != "" {
			names[e.ID] = cleanLabel(e.ThreadName)
		}
		return true
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read Codex session index: %w", err)
	}
	return names, nil
}

// readCodex reads one rollout. user is false for threads a sub-agent
// started (their source is an object, not "cli", "exec", "vscode"…).
func readCodex(ctx context.Context, path string) (s Session, user bool, err error) {
	info, err := os.Lstat(path)
	if err != nil {
		return Session{}, false, err
	}
	s = Session{Tool: Codex, Path: path, LastActive: info.ModTime().UTC()}
	user = true
	var last string
	err = eachLine(ctx, path, func(line []byte) bool {
		var l codexLine
		if json.Unmarshal(line, &l) != nil {
			return true
		}
		if l.Timestamp != "" {
			last = l.Timestamp
		}
		switch l.Type {
		case "session_meta":
			var m struct {
				ID     string          `json:"id"`
				Cwd    string          `json:"cwd"`
				Source json.RawMessage `json:"source"`
			}
			if json.Unmarshal(l.Payload, &m) == nil && s.ID == "" {
				s.ID, s.Folder = m.ID, m.Cwd
				src := strings.TrimSpace(string(m.Source))
				user = src == "" || strings.HasPrefix(src, `"`)
			}
		case "response_item":
			if s.Title != "" {
				return true
			}
			var m codexMessage
			if json.Unmarshal(l.Payload, &m) != nil || m.Type != "message" || m.Role != "user" {
				return true
			}
			for _, c := range m.Content {
				t := strings.TrimSpace(c.Text)
				if c.Type == "input_text" && t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "# AGENTS.md") {
					s.Title = shortTitle(t)
					break
				}
			}
		}
		return true
	})
	if err != nil {
		return Session{}, false, err
	}
	if t := parseTime(last); !t.IsZero() {
		s.LastActive = t
	}
	return s, user, nil
}
