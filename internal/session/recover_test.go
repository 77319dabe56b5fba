package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/session"
)

func TestRecover(t *testing.T) {
	claude := session.Session{Tool: session.ClaudeCode, Path: filepath.Join("testdata", "recover", "claude.jsonl")}
	codex := session.Session{Tool: session.Codex, Path: filepath.Join("testdata", "recover", "codex.jsonl")}
	for _, tc := range []struct {
		name  string
		s     session.Session
		token string
		want  string
		err   error
	}{
		{"claude, after the request only", claude, "CCREQ-7d1f", "CCREQ-7d1f: three points.", nil},
		{"codex, after the request only", codex, "CCREQ-99aa", "CCREQ-99aa: fixed.", nil},
		{"request never delivered", claude, "CCREQ-none", "", session.ErrNoAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := session.Recover(tc.s, tc.token, time.Time{})
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("Recover = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// The CLI died right after the request: nothing to recover.
func TestRecoverNothingYet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	body := `{"type":"assistant","message":{"role":"assistant","content":"Before."},"sessionId":"s"}
{"type":"user","message":{"role":"user","content":"Request token CCREQ-1."},"sessionId":"s"}
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := session.Recover(session.Session{Tool: session.ClaudeCode, Path: path}, "CCREQ-1", time.Time{}); !errors.Is(err, session.ErrNoAnswer) {
		t.Fatalf("Recover = %q, %v; want ErrNoAnswer", got, err)
	}
}
