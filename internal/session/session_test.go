package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// copiedFixtures copies the fixture home into a temporary folder and sets
// each transcript's file time to its session's last activity, as the CLIs
// leave it (a checkout gives every file the same time).
func copiedFixtures(t *testing.T) session.Store {
	t.Helper()
	src := fixtures(t)
	home := t.TempDir()
	err := filepath.WalkDir(src.Home, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src.Home, path)
		dst := filepath.Join(home, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	st := session.Store{Home: home}
	list, err := st.List("")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		for _, p := range append([]string{s.Path}, s.Paths...) {
			if err := os.Chtimes(p, s.LastActive, s.LastActive); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st
}

// The fixture sessions (internal/session/testdata/home), newest first:
// codex …05 "store refactor" (two rollouts), codex …06 (title "Run the
// store benchmarks."), claude …04 (first prompt), claude …02 (generated
// title "Changelog for 2.0 written"), claude …01 and …03 both named
// "release prep".
const (
	idRelease1 = "0b6c1d2e-1111-4a5b-8c9d-000000000001"
	idChangelg = "0b6c1d2e-2222-4a5b-8c9d-000000000002"
	idRelease3 = "0b6c1d2e-3333-4a5b-8c9d-000000000003"
	idStore    = "7f3e0000-aaaa-4bbb-8ccc-000000000005"
	idBench    = "7f3e0000-aaaa-4bbb-8ccc-000000000006"
)

// TestResolve resolves a post's targetSession against the sessions an
// agent can be reached in, from several sources.
func TestResolve(t *testing.T) {
	st := copiedFixtures(t)
	all := func(bound int) session.Source {
		return func(ctx context.Context, _, _ string) (session.Found, error) { return st.Within(ctx, "", bound, nil) }
	}
	// A live session (a channel announced its name) that shadows a
	// generated title with a person's name.
	live := func(context.Context, string, string) (session.Found, error) {
		return session.Found{Sessions: []session.Session{{ID: "live-1", Name: "Run the store benchmarks."}}}, nil
	}
	none := func(context.Context, string, string) (session.Found, error) { return session.Found{}, nil }
	for _, tc := range []struct {
		name    string
		sources []session.Source
		ref     string
		wantID  string
		code    string   // error code
		cands   []string // session_ambiguous candidate ids
		similar []string
		bound   bool // the error names the lookup bound
	}{
		{name: "exact name", sources: []session.Source{all(0)}, ref: "store refactor", wantID: idStore},
		{name: "names are exact", sources: []session.Source{all(0)}, ref: "Store Refactor", code: relay.ESessionNotFound, similar: []string{"store refactor"}},
		{name: "generated title", sources: []session.Source{all(0)}, ref: "Changelog for 2.0 written", wantID: idChangelg},
		{name: "a name wins over a generated title", sources: []session.Source{all(0), live}, ref: "Run the store benchmarks.", wantID: "live-1"},
		{name: "generated title without the named one", sources: []session.Source{all(0)}, ref: "Run the store benchmarks.", wantID: idBench},
		{name: "none, with similar names", sources: []session.Source{all(0)}, ref: "release", code: relay.ESessionNotFound, similar: []string{"release prep"}},
		{name: "none at all", sources: []session.Source{none}, ref: "release prep", code: relay.ESessionNotFound, similar: []string{}},
		{name: "ambiguous, with candidates", sources: []session.Source{all(0)}, ref: "release prep", code: relay.ESessionAmbiguous, cands: []string{idRelease1, idRelease3}},
		{name: "by id", sources: []session.Source{all(0)}, ref: idRelease3, wantID: idRelease3},
		{name: "by id of a Codex thread with two rollouts", sources: []session.Source{all(0)}, ref: idStore, wantID: idStore},
		{name: "by id past the bound", sources: []session.Source{all(1)}, ref: idRelease3, wantID: idRelease3},
		{name: "a name past the bound", sources: []session.Source{all(1)}, ref: "release prep", code: relay.ESessionNotFound, bound: true},
		{name: "sources are merged", sources: []session.Source{none, live}, ref: "live-1", wantID: "live-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := session.Resolver{Sources: tc.sources}.Resolve(context.Background(), "operator", "builder", tc.ref)
			if tc.code == "" {
				if err != nil || s.ID != tc.wantID {
					t.Fatalf("Resolve(%q) = %s, %v; want %s", tc.ref, s.ID, err, tc.wantID)
				}
				return
			}
			var e *relay.Error
			if !errors.As(err, &e) || e.Code != tc.code {
				t.Fatalf("Resolve(%q) = %s, %v; want %s", tc.ref, s.ID, err, tc.code)
			}
			if tc.cands != nil {
				cands, _ := e.Details["candidates"].([]session.Candidate)
				var ids []string
				for _, c := range cands {
					ids = append(ids, c.ID)
					if !strings.Contains(e.Message, c.ID) || c.LastActive == "" {
						t.Errorf("candidate %+v: not in %q or without its last activity", c, e.Message)
					}
				}
				if !slices.Equal(ids, tc.cands) {
					t.Errorf("candidates %v, want %v", ids, tc.cands)
				}
			}
			if tc.similar != nil {
				if got, _ := e.Details["similar"].([]string); !slices.Equal(got, tc.similar) {
					t.Errorf("similar %q, want %q (%s)", got, tc.similar, e.Message)
				}
			}
			if hasBound := strings.Contains(e.Message, "newest 1 sessions") && e.Details["bound"] == 1; hasBound != tc.bound {
				t.Errorf("message %q (details %v): names the bound = %v, want %v", e.Message, e.Details, hasBound, tc.bound)
			}
		})
	}
}

// TestRecentBound reads only the newest sessions per CLI, and counts a
// Codex thread's rollouts as one session.
func TestRecentBound(t *testing.T) {
	st := copiedFixtures(t)
	for _, tc := range []struct {
		tool         string
		bound        int
		read, beyond []string
	}{
		{session.Codex, 0, []string{idStore, idBench}, []string{}},
		{session.Codex, 1, []string{idStore}, []string{idBench}},
		{session.ClaudeCode, 2, []string{"0b6c1d2e-4444-4a5b-8c9d-000000000004", idChangelg}, []string{idRelease1, idRelease3}},
	} {
		l, err := st.Recent(tc.tool, tc.bound)
		if err != nil {
			t.Fatal(err)
		}
		if got := sessionIDs(l.Sessions); !slices.Equal(got, tc.read) {
			t.Errorf("%s bound %d: read %v, want %v", tc.tool, tc.bound, got, tc.read)
		}
		if got := sessionIDs(l.Beyond); !slices.Equal(got, tc.beyond) {
			t.Errorf("%s bound %d: beyond %v, want %v", tc.tool, tc.bound, got, tc.beyond)
		}
	}
}

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

// BenchmarkResolveAmongNewest resolves a name among 600 Claude Code
// sessions of about 100 KiB each (the newest 500 are read; unchanged files
// come from the cache after the first lookup).
func BenchmarkResolveAmongNewest(b *testing.B) {
	home := b.TempDir()
	dir := filepath.Join(home, ".claude", "projects", "-work")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	filler := strings.Repeat("x", 1000)
	for i := range 600 {
		id := fmt.Sprintf("5e55a0b1-0000-4000-8000-%012d", i)
		var sb strings.Builder
		for range 100 {
			fmt.Fprintf(&sb, `{"type":"user","message":{"role":"user","content":%q},"cwd":"/work","sessionId":%q,"timestamp":"2026-11-30T10:00:00Z"}`+"\n", filler, id)
		}
		fmt.Fprintf(&sb, `{"type":"custom-title","customTitle":"chat %d","sessionId":%q}`+"\n", i, id)
		path := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, at, at); err != nil {
			b.Fatal(err)
		}
	}
	st := session.Store{Home: home}
	r := session.Resolver{Sources: []session.Source{func(ctx context.Context, _, _ string) (session.Found, error) {
		return st.Within(ctx, session.ClaudeCode, session.RecentBound, nil)
	}}}
	b.ResetTimer()
	for b.Loop() {
		if s, err := r.Resolve(context.Background(), "operator", "builder", "chat 599"); err != nil || s.ID == "" {
			b.Fatal(s, err)
		}
	}
}

// sessionIDs are the ids of ss, in order ([] for none).
func sessionIDs(ss []session.Session) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
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
