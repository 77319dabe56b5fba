package session_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
)

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
