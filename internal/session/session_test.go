package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtures is a home folder with Claude Code transcripts and Codex threads.
func fixtures(t *testing.T) session.Store {
	t.Helper()
	home, err := filepath.Abs(filepath.Join("testdata", "home"))
	if err != nil {
		t.Fatal(err)
	}
	return session.Store{Home: home}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestListGolden(t *testing.T) {
	st := fixtures(t)
	for _, tool := range []string{"", session.ClaudeCode, session.Codex} {
		name := tool
		if name == "" {
			name = "all"
		}
		t.Run(name, func(t *testing.T) {
			list, err := st.List(tool)
			if err != nil {
				t.Fatal(err)
			}
			for i := range list { // paths relative to the home folder
				rel, _ := filepath.Rel(st.Home, list[i].Path)
				list[i].Path = filepath.ToSlash(rel) // the golden files hold / on every system
			}
			b, err := json.MarshalIndent(list, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "list-"+name+".golden", append(b, '\n'))
		})
	}
	if _, err := st.List("gemini"); err == nil {
		t.Error("an unknown tool was accepted")
	}
}

func TestLookup(t *testing.T) {
	st := fixtures(t)
	for _, tc := range []struct {
		name, tool, ref string
		wantID          string
		ambiguous       []string // candidate ids
		similar         []string
	}{
		{name: "by id", ref: "0b6c1d2e-2222-4a5b-8c9d-000000000002", wantID: "0b6c1d2e-2222-4a5b-8c9d-000000000002"},
		{name: "by exact name", ref: "store refactor", wantID: "7f3e0000-aaaa-4bbb-8ccc-000000000005"},
		{name: "earlier name no longer counts", ref: "parser work", similar: []string{}},
		{name: "by generated title", ref: "Changelog for 2.0 written", wantID: "0b6c1d2e-2222-4a5b-8c9d-000000000002"},
		{name: "names are exact", ref: "Store Refactor", similar: []string{"store refactor"}},
		{name: "two sessions share a name", ref: "release prep",
			ambiguous: []string{"0b6c1d2e-1111-4a5b-8c9d-000000000001", "0b6c1d2e-3333-4a5b-8c9d-000000000003"}},
		{name: "one tool only", tool: session.ClaudeCode, ref: "store refactor", similar: []string{}},
		{name: "none, similar names", ref: "release", similar: []string{"release prep"}},
		{name: "sub-agent threads are not listed", ref: "7f3e0000-aaaa-4bbb-8ccc-000000000007", similar: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := st.Lookup(tc.tool, tc.ref)
			var amb *session.AmbiguousError
			var nf *session.NotFoundError
			switch {
			case tc.wantID != "":
				if err != nil || s.ID != tc.wantID {
					t.Fatalf("Lookup(%q) = %s, %v; want %s", tc.ref, s.ID, err, tc.wantID)
				}
			case tc.ambiguous != nil:
				if !errors.As(err, &amb) {
					t.Fatalf("Lookup(%q) = %+v, %v; want ambiguous", tc.ref, s, err)
				}
				var ids []string
				for _, c := range amb.Candidates {
					ids = append(ids, c.ID)
				}
				if strings.Join(ids, ",") != strings.Join(tc.ambiguous, ",") {
					t.Fatalf("candidates %v, want %v", ids, tc.ambiguous)
				}
				for _, id := range tc.ambiguous {
					if !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "last active") {
						t.Errorf("message %q lacks %s and its last activity", err, id)
					}
				}
			default:
				if !errors.As(err, &nf) {
					t.Fatalf("Lookup(%q) = %+v, %v; want not found", tc.ref, s, err)
				}
				got := nf.Similar
				if got == nil {
					got = []string{}
				}
				if strings.Join(got, "|") != strings.Join(tc.similar, "|") {
					t.Fatalf("similar %q, want %q", got, tc.similar)
				}
			}
		})
	}
}

func TestMissingStores(t *testing.T) {
	list, err := session.Store{Home: t.TempDir()}.List("")
	if err != nil || len(list) != 0 {
		t.Fatalf("empty home: %v, %v", list, err)
	}
}

// A transcript line longer than the parse bound is skipped, not fatal.
func TestLongLineSkipped(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "projects", "-x")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	huge := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 5<<20) + `"}}`
	body := huge + "\n" + `{"type":"custom-title","customTitle":"after the long line","sessionId":"s1"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := session.Store{Home: home}.Lookup("", "after the long line")
	if err != nil || s.ID != "s1" {
		t.Fatalf("Lookup = %+v, %v", s, err)
	}
}

// TestStoreFollowsMovedFolders: CLAUDE_CONFIG_DIR and CODEX_HOME move the
// CLIs' folders out of the home folder, and the store reads them there.
func TestStoreFollowsMovedFolders(t *testing.T) {
	home := fixtures(t).Home
	claude, codex := filepath.Join(home, ".claude"), filepath.Join(home, ".codex")
	empty := t.TempDir()
	ids := func(st session.Store, tool string) []string {
		t.Helper()
		list, err := st.List(tool)
		if err != nil {
			t.Fatal(err)
		}
		return sessionIDs(list)
	}
	if len(ids(fixtures(t), session.ClaudeCode)) == 0 || len(ids(fixtures(t), session.Codex)) == 0 {
		t.Fatal("the fixtures need sessions of both tools")
	}
	for _, tc := range []struct {
		name, tool string
		st         session.Store
		want       []string
	}{
		{"claude moved here", session.ClaudeCode, session.Store{Home: empty, ClaudeDir: claude}, ids(fixtures(t), session.ClaudeCode)},
		{"codex moved here", session.Codex, session.Store{Home: empty, CodexDir: codex}, ids(fixtures(t), session.Codex)},
		{"claude moved away", session.ClaudeCode, session.Store{Home: home, ClaudeDir: empty}, []string{}},
		{"codex moved away", session.Codex, session.Store{Home: home, CodexDir: empty}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(tc.st, tc.tool); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("sessions = %v, want %v", got, tc.want)
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
	mkfifo(t, filepath.Join(dir, "5e55a0b1-0000-4000-8000-00000000bb02.jsonl"))
	symlink(t, "/dev/zero", filepath.Join(dir, "5e55a0b1-0000-4000-8000-00000000bb03.jsonl"))
	elsewhere := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(elsewhere, []byte(titled("5e55a0b1-0000-4000-8000-00000000bb04", "linked")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, filepath.Join(dir, "5e55a0b1-0000-4000-8000-00000000bb04.jsonl"))
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
	symlink(t, outside, link)
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
	keep := func(f string) bool { _, err := realdir.Within(f, []string{work}); return err == nil }
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

// Ensure a lookup that outlasts session.LookupBudget (a source stuck on a
// slow disk) refuses the post instead of holding it.
func TestLookupBudget(t *testing.T) {
	stuck := func(ctx context.Context, _, _ string) (session.Found, error) {
		<-ctx.Done()
		return session.Found{}, ctx.Err()
	}
	_, err := session.Resolver{Sources: []session.Source{stuck}}.Resolve(context.Background(), "operator", "builder", "release prep")
	if relay.ErrorCode(err) != relay.EInvalidRequest || !strings.Contains(relay.ErrorMessage(err), "took longer than") {
		t.Fatalf("Resolve = %v; want the lookup refused as too long", err)
	}
}
