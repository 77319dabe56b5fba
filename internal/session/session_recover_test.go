package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/session"
)

// TestRecoverAcrossRollouts finds the answer in a later rollout of a Codex
// thread (Codex may write a resumed turn to a new file with the same id).
func TestRecoverAcrossRollouts(t *testing.T) {
	st := copiedFixtures(t)
	s, err := st.ByID(session.Codex, idStore)
	if err != nil || len(s.Paths) != 2 || s.Name != "store refactor" {
		t.Fatalf("ByID = %+v, %v; want the thread with both rollouts and its name", s, err)
	}
	got, err := session.Recover(s, "crosschat-req-00000000000000aa", time.Time{})
	if err != nil || !strings.HasPrefix(got, "Metric added.") {
		t.Fatalf("Recover = %q, %v", got, err)
	}
}

// writeClaude writes a Claude Code transcript <id>.jsonl in the projects
// folder of st, the way the CLI writes it (one JSON record a line).
func writeClaude(t *testing.T, st session.Store, dir, id string, lines ...string) string {
	t.Helper()
	path := filepath.Join(st.ClaudeProjects(), dir, id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// claudeRec is one transcript record of session id that ran in cwd.
func claudeRec(id, cwd, typ, content string) string {
	return fmt.Sprintf(`{"type":%q,"message":{"role":%q,"content":%s},"sessionId":%q,"cwd":%q,"timestamp":"2026-12-01T10:00:00Z"}`, typ, typ, content, id, cwd)
}

// titled is a custom-title record (a person's name for the session).
func titled(id, name string) string {
	b, err := json.Marshal(map[string]string{"type": "custom-title", "customTitle": name, "sessionId": id})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Ensure a recovered answer is only what the session wrote for the request:
// it stops at the next prompt (tool results belong to the same turn), and a
// session that moved on is reported as such with only the partial answer.
func TestRecoverStopsAtTheNextPrompt(t *testing.T) {
	const id, tok = "5e55a0b1-0000-4000-8000-00000000aa01", "crosschat-req-00000000000000f1"
	req := claudeRec(id, "/w", "user", fmt.Sprintf("%q", "Check the lexer. "+tok))
	partial := claudeRec(id, "/w", "assistant", `[{"type":"text","text":"Partial answer."}]`)
	toolResult := claudeRec(id, "/w", "user", `[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]`)
	rest := claudeRec(id, "/w", "assistant", `[{"type":"text","text":"Rest of the answer."}]`)
	later := claudeRec(id, "/w", "user", `"What about the parser?"`)
	laterAnswer := claudeRec(id, "/w", "assistant", `[{"type":"text","text":"SECRET later answer for someone else."}]`)
	for _, tc := range []struct {
		name  string
		lines []string
		since time.Time
		want  string
		moved bool
	}{
		// The records are stamped 10:00; a turn claimed at 11:00 ignores
		// them (a request planted earlier).
		{name: "stamped before the turn", lines: []string{req, partial}, since: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), moved: false, want: "-"},
		{name: "answer with tool results", lines: []string{req, partial, toolResult, rest}, want: "Partial answer.\n\nRest of the answer."},
		{name: "later prompt and its answer", lines: []string{req, partial, later, laterAnswer}, want: "Partial answer.", moved: true},
		{name: "another request follows", lines: []string{req, later, laterAnswer}, moved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := session.Store{Home: t.TempDir()}
			path := writeClaude(t, st, "-w", id, tc.lines...)
			got, err := session.Recover(session.Session{Tool: session.ClaudeCode, ID: id, Path: path}, tok, tc.since)
			var mv *session.MovedOnError
			if errors.As(err, &mv) != tc.moved {
				t.Fatalf("Recover = %q, %v; moved on = %v", got, err, tc.moved)
			}
			if tc.moved {
				if mv.Text != tc.want || got != "" {
					t.Fatalf("moved on: text %q (returned %q), want %q only", mv.Text, got, tc.want)
				}
				return
			}
			if tc.want == "-" {
				if !errors.Is(err, session.ErrNoAnswer) {
					t.Fatalf("Recover = %q, %v; want ErrNoAnswer", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Recover = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// A turn that ended in a message Claude Code wrote itself for its own error
// (what it writes when not logged in, copied from 2.1.332's transcript) is
// a failure, never an answer: recovered, it reports the cause, with what
// the turn wrote before it; an answer after such a message is recovered as
// usual, without the error's text.
func TestRecoverTellsTheCLIsErrorFromAnAnswer(t *testing.T) {
	const id, tok = "5e55a0b1-0000-4000-8000-00000000aa02", "crosschat-req-00000000000000f2"
	req := claudeRec(id, "/w", "user", fmt.Sprintf("%q", "Check the lexer. "+tok))
	partial := claudeRec(id, "/w", "assistant", `[{"type":"text","text":"Partial answer."}]`)
	notLoggedIn := `{"type":"assistant","message":{"id":"a36d43d4","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message",` +
		`"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"sessionId":"` + id + `","cwd":"/w","timestamp":"2026-12-01T10:00:00Z",` +
		`"error":"authentication_failed","isApiErrorMessage":true}`
	answer := claudeRec(id, "/w", "assistant", `[{"type":"text","text":"The lexer is fine."}]`)
	for _, tc := range []struct {
		name        string
		lines       []string
		cause, text string // a *FailedError's
		want        string // else the answer
	}{
		{name: "not logged in", lines: []string{req, notLoggedIn}, cause: "Not logged in · Please run /login"},
		{name: "failed after a partial answer", lines: []string{req, partial, notLoggedIn}, cause: "Not logged in · Please run /login", text: "Partial answer."},
		{name: "answered after the error", lines: []string{req, notLoggedIn, answer}, want: "The lexer is fine."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := session.Store{Home: t.TempDir()}
			path := writeClaude(t, st, "-w", id, tc.lines...)
			got, err := session.Recover(session.Session{Tool: session.ClaudeCode, ID: id, Path: path}, tok, time.Time{})
			var failed *session.FailedError
			if errors.As(err, &failed) != (tc.cause != "") {
				t.Fatalf("Recover = %q, %v", got, err)
			}
			if tc.cause != "" {
				if failed.Cause != tc.cause || failed.Text != tc.text || failed.Failure() != tc.cause || got != "" {
					t.Fatalf("failed: %+v (returned %q); want cause %q, text %q", failed, got, tc.cause, tc.text)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Recover = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
