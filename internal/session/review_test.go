//go:build unix

package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
)

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
		want  string
		moved bool
	}{
		{name: "answer with tool results", lines: []string{req, partial, toolResult, rest}, want: "Partial answer.\n\nRest of the answer."},
		{name: "later prompt and its answer", lines: []string{req, partial, later, laterAnswer}, want: "Partial answer.", moved: true},
		{name: "another request follows", lines: []string{req, later, laterAnswer}, moved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := session.Store{Home: t.TempDir()}
			path := writeClaude(t, st, "-w", id, tc.lines...)
			got, err := session.Recover(session.Session{Tool: session.ClaudeCode, ID: id, Path: path}, tok)
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
			if err != nil || got != tc.want {
				t.Fatalf("Recover = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// Ensure a lookup never blocks or spins on what is not a regular file in
// the projects folder: a FIFO, a link to /dev/zero, a link to a real
// transcript elsewhere (skipped, not followed).
func TestLookupSkipsWhatIsNotARegularFile(t *testing.T) {
	st := session.Store{Home: t.TempDir()}
	const good = "5e55a0b1-0000-4000-8000-00000000bb01"
	writeClaude(t, st, "-w", good, claudeRec(good, "/w", "user", `"Hello."`), titled(good, "good one"))
	dir := filepath.Join(st.ClaudeProjects(), "-w")
	if err := syscall.Mkfifo(filepath.Join(dir, "5e55a0b1-0000-4000-8000-00000000bb02.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "5e55a0b1-0000-4000-8000-00000000bb03.jsonl")); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(elsewhere, []byte(titled("5e55a0b1-0000-4000-8000-00000000bb04", "linked")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "5e55a0b1-0000-4000-8000-00000000bb04.jsonl")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		s   session.Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		src := func(ctx context.Context, _, _ string) (session.Found, error) {
			return st.Within(ctx, session.ClaudeCode, session.RecentBound, nil)
		}
		s, err := session.Resolver{Sources: []session.Source{src}}.Resolve(context.Background(), "operator", "builder", "linked")
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if relay.ErrorCode(r.err) != relay.ESessionNotFound {
			t.Fatalf("Resolve(linked) = %+v, %v; want session_not_found (a link is not read)", r.s, r.err)
		}
	case <-time.After(time.Minute): // a deadline, not a timing: the old code never returned
		t.Fatal("the lookup blocked on a FIFO or /dev/zero")
	}
	list, err := st.List(session.ClaudeCode)
	if err != nil || len(list) != 1 || list[0].ID != good {
		t.Fatalf("List = %v, %v; want only the regular transcript", sessionIDs(list), err)
	}
}

// Ensure a session id that could pass as an option (a transcript named
// --dangerously-skip-permissions.jsonl) is neither listed nor resolved.
func TestOptionLikeIDNotListed(t *testing.T) {
	st := session.Store{Home: t.TempDir()}
	const bad = "--dangerously-skip-permissions"
	writeClaude(t, st, "-w", bad, claudeRec(bad, "/w", "user", `"Hello."`), titled(bad, "evil"))
	list, err := st.List(session.ClaudeCode)
	if err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v; want nothing", sessionIDs(list), err)
	}
	for _, ref := range []string{bad, "evil"} {
		if _, err := st.Lookup(session.ClaudeCode, ref); err == nil {
			t.Errorf("Lookup(%q) found it", ref)
		}
		if _, err := st.ByID(session.ClaudeCode, ref); err == nil {
			t.Errorf("ByID(%q) found it", ref)
		}
	}
	for id, ok := range map[string]bool{"5e55a0b1-0000-4000-8000-00000000bb01": true, "-x": false, "a b": false, "a/b": false, "": false} {
		if session.ValidID(id) != ok {
			t.Errorf("ValidID(%q) = %v", id, !ok)
		}
	}
}

// Ensure an any-session lookup looks only at sessions in the worker's
// folders, past the bound too, and names no folder: a name or id whose
// only session ran elsewhere (or in a folder reached through a link inside
// the worker's folder) is not found.
func TestLocateWithinRootsOnly(t *testing.T) {
	home := t.TempDir()
	work, outside := filepath.Join(home, "work"), filepath.Join(home, "secret-data")
	for _, d := range []string{work, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(work, "x")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	st := session.Store{Home: home}
	const mine, far, linked, old = "5e55a0b1-0000-4000-8000-00000000cc01", "5e55a0b1-0000-4000-8000-00000000cc02", "5e55a0b1-0000-4000-8000-00000000cc03", "5e55a0b1-0000-4000-8000-00000000cc04"
	at := time.Now()
	for i, s := range []struct{ id, cwd, name string }{{mine, work, "mine"}, {far, outside, "far"}, {linked, link, "pwn"}, {old, outside, "old far"}} {
		p := writeClaude(t, st, "-"+s.name, s.id, claudeRec(s.id, s.cwd, "user", `"Hello."`), titled(s.id, s.name))
		mod := at.Add(-time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	turns := session.Turns{Sessions: st}
	if id, folder, err := turns.Locate(session.ClaudeCode, "mine", []string{work}); err != nil || id != mine || folder != work {
		t.Fatalf("Locate(mine) = %s, %s, %v", id, folder, err)
	}
	for _, ref := range []string{"far", far, "pwn", linked, old, "old far"} {
		_, _, err := turns.Locate(session.ClaudeCode, ref, []string{work})
		if relay.ErrorCode(err) != relay.ESessionNotFound || strings.Contains(err.Error(), home) {
			t.Errorf("Locate(%q) = %v; want session_not_found naming no folder", ref, err)
		}
	}
	// The bound hides old: past it, an id or name is checked against the folders too.
	keep := func(f string) bool { _, err := relay.RealFolderWithin(f, []string{work}); return err == nil }
	src := func(ctx context.Context, _, _ string) (session.Found, error) {
		return st.Within(ctx, session.ClaudeCode, 1, keep)
	}
	for _, ref := range []string{old, "old far"} {
		_, err := session.Resolver{Sources: []session.Source{src}}.Resolve(context.Background(), "operator", "builder", ref)
		var e *relay.Error
		if !errors.As(err, &e) || e.Code != relay.ESessionNotFound || e.Details["olderMatch"] != nil {
			t.Errorf("Resolve(%q) past the bound = %v (%v); want session_not_found without an older match", ref, err, e)
		}
	}
}

// Ensure refusals stay small and clean: at most ten candidates, names
// without control characters and at most 200 characters, similar names
// only for refs of three characters or more and never generated titles.
func TestRefusalsBounded(t *testing.T) {
	st := session.Store{Home: t.TempDir()}
	for i := range 12 {
		id := fmt.Sprintf("5e55a0b1-0000-4000-8000-0000000dd%03d", i)
		writeClaude(t, st, "-w", id, claudeRec(id, "/w", "user", `"My secret first prompt."`), titled(id, "same\x07 \x1bname"))
	}
	const long = "5e55a0b1-0000-4000-8000-00000000ee01"
	writeClaude(t, st, "-v", long, claudeRec(long, "/v", "user", `"Hi."`), titled(long, strings.Repeat("n", 500)))
	src := func(ctx context.Context, _, _ string) (session.Found, error) {
		return st.Within(ctx, session.ClaudeCode, 0, nil)
	}
	r := session.Resolver{Sources: []session.Source{src}}
	_, err := r.Resolve(context.Background(), "operator", "builder", "same name")
	var e *relay.Error
	if !errors.As(err, &e) || e.Code != relay.ESessionAmbiguous {
		t.Fatalf("Resolve = %v; want session_ambiguous", err)
	}
	if cands := e.Details["candidates"].([]session.Candidate); len(cands) != 10 || !strings.Contains(e.Message, "2 more") {
		t.Errorf("%d candidates (%s); want 10 and the rest counted", len(cands), e.Message)
	}
	list, _ := st.List(session.ClaudeCode)
	for _, s := range list {
		if len([]rune(s.Name)) > 200 || strings.ContainsAny(s.Name, "\x07\x1b") {
			t.Errorf("name %q: not cleaned", s.Name)
		}
	}
	for ref, want := range map[string]int{"My secret first prompt": 0, "sa": 0, "same": 1} {
		_, err := r.Resolve(context.Background(), "operator", "builder", ref)
		if !errors.As(err, &e) || e.Code != relay.ESessionNotFound {
			t.Fatalf("Resolve(%q) = %v", ref, err)
		}
		if got := e.Details["similar"].([]string); len(got) != want || strings.Contains(e.Message, "prompt.”") {
			t.Errorf("Resolve(%q): similar %q (%s), want %d", ref, got, e.Message, want)
		}
	}
}
