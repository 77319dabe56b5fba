// Package session reads the agent CLIs' own session stores on this
// computer: Claude Code's transcripts (~/.claude/projects/<dir>/<id>.jsonl)
// and Codex's threads (~/.codex/sessions/**/rollout-*.jsonl, named in
// ~/.codex/session_index.jsonl). It lists sessions and finds one by id or
// by exact name, refusing ambiguous or unknown names with the candidates
// or similar names.
//
// It imports only the standard library.
package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Tools whose sessions are read (the relay's harness ids).
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// maxLine bounds one transcript line that is parsed; longer lines (large
// tool outputs) are skipped.
const maxLine = 4 << 20

// maxTitle bounds a title derived from the first prompt (runes).
const maxTitle = 80

// Session is one Claude Code session or Codex thread.
type Session struct {
	Tool string `json:"tool"`
	ID   string `json:"id"`
	// Folder is the working folder the session ran in.
	Folder string `json:"folder"`
	// Name is the name a person gave it (Claude Code /rename, Codex thread
	// name); empty when it has none.
	Name string `json:"name,omitempty"`
	// Title is the generated title (or the first prompt, shortened).
	Title string `json:"title,omitempty"`
	// LastActive is the newest record's time (else the file's modification time).
	LastActive time.Time `json:"lastActive"`
	// Path is the transcript file (Codex: the newest rollout of the thread).
	Path string `json:"path"`
	// Paths are every transcript file of the session, oldest first, when
	// it has more than one (Codex rollouts sharing the thread's id).
	Paths []string `json:"-"`
	// grp is the files of a session past a listing's bound (not read yet).
	grp *group
	// keep is the folder check of the source that listed it past its bound.
	keep func(folder string) bool
}

// maxID bounds a session id's length.
const maxID = 128

// ValidID reports whether id can name a session on a CLI's command line:
// letters, digits, '-' and '_' (a UUID), not starting with '-' (never an
// option), at most maxID bytes.
func ValidID(id string) bool {
	if id == "" || len(id) > maxID || id[0] == '-' {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// files is every transcript file of s, oldest first.
func (s Session) files() []string {
	if len(s.Paths) > 0 {
		return s.Paths
	}
	return []string{s.Path}
}

// Named reports whether a person named the session.
func (s Session) Named() bool { return s.Name != "" }

// Label is the name, else the title.
func (s Session) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Title
}

// Store reads the session stores of one user.
type Store struct {
	// Home is the user's home folder (~).
	Home string
	// ClaudeDir is Claude Code's own folder, where CLAUDE_CONFIG_DIR puts
	// it; empty means Home/.claude.
	ClaudeDir string
	// CodexDir is Codex's own folder, where CODEX_HOME puts it; empty means
	// Home/.codex.
	CodexDir string
}

// ClaudeProjects is the folder of Claude Code's transcripts.
func (st Store) ClaudeProjects() string {
	dir := st.ClaudeDir
	if dir == "" {
		dir = filepath.Join(st.Home, ".claude")
	}
	return filepath.Join(dir, "projects")
}

// CodexHome is Codex's folder (its sessions and session_index.jsonl).
func (st Store) CodexHome() string {
	if st.CodexDir != "" {
		return st.CodexDir
	}
	return filepath.Join(st.Home, ".codex")
}

// List returns the sessions of tool ("" for both), newest first. Codex
// rollouts that share a thread id count as one session.
func (st Store) List(tool string) ([]Session, error) {
	l, err := st.Recent(tool, 0)
	return l.Sessions, err
}

// AmbiguousError refuses a name that matches more than one session.
type AmbiguousError struct {
	Name       string
	Candidates []Session
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions are named “%s”; name one by id:", len(e.Candidates), e.Name)
	for _, c := range e.Candidates {
		kind := "named"
		if !c.Named() {
			kind = "generated title"
		}
		fmt.Fprintf(&b, "\n  %s %s  last active %s  (%s, %s)", c.Tool, c.ID, c.LastActive.Format(time.RFC3339), kind, c.Folder)
	}
	return b.String()
}

// NotFoundError refuses a name or id that matches no session.
type NotFoundError struct {
	Name    string
	Similar []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("No session is named “%s” (names match exactly).", e.Name)
	if len(e.Similar) > 0 {
		msg += " Similar: “" + strings.Join(e.Similar, "”, “") + "”."
	}
	return msg
}

// Lookup finds the session of tool ("" for both) whose id is ref, or whose
// name (else generated title) is exactly ref. Several matches are an
// *AmbiguousError with the candidates, none a *NotFoundError with similar
// names.
func (st Store) Lookup(tool, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Session{}, errors.New("sessions: give a session id or name")
	}
	all, err := st.List(tool)
	if err != nil {
		return Session{}, err
	}
	for _, s := range all {
		if s.ID == ref {
			return s, nil
		}
	}
	var hits []Session
	for _, s := range all {
		if s.Name == ref {
			hits = append(hits, s)
		}
	}
	if len(hits) == 0 { // a generated title counts only when no person's name matches
		for _, s := range all {
			if !s.Named() && s.Title == ref {
				hits = append(hits, s)
			}
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return Session{}, &NotFoundError{Name: ref, Similar: similar(ref, all)}
	}
	return Session{}, &AmbiguousError{Name: ref, Candidates: hits}
}

// similar returns up to five labels close to ref: containing it or it
// containing them (case-insensitively), or a few edits away.
func similar(ref string, all []Session) []string {
	labels := make([]string, len(all))
	for i, s := range all {
		labels[i] = s.Label()
	}
	return relay.Similar(ref, labels, strings.ToLower, 5)
}
