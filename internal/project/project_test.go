package project_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/filelock"
	"github.com/crosschat/crosschat-relay/internal/project"
)

// The id rules: --id, then CROSSCHAT_PROJECT_ID, then the folder's name;
// lowercase, runs of other characters become one "-", no "-" at the ends;
// given ids that are paths, hold control characters or are too long are
// refused before they are normalised; an id that normalises to nothing (or
// to one character, or past 80) is refused with the reason.
func TestResolveID(t *testing.T) {
	long := strings.Repeat("a", 81)
	for _, tc := range []struct {
		name         string
		flag, env    string
		dir          string
		want         string
		src          project.Source
		errHas       string // "" for success
		errHasSource bool
	}{
		{name: "folder name", dir: "/src/api", want: "api", src: project.FromFolder},
		{name: "punctuation and case", dir: "/src/My Project!", want: "my-project", src: project.FromFolder},
		{name: "underscore", dir: "/src/other_repo", want: "other-repo", src: project.FromFolder},
		{name: "runs collapse", dir: "/src/--A__b  c--", want: "a-b-c", src: project.FromFolder},
		{name: "dots", dir: "/src/api.v2", want: "api-v2", src: project.FromFolder},
		{name: "non-ascii letters are separators", dir: "/src/café-bar", want: "caf-bar", src: project.FromFolder},
		{name: "trailing slash", dir: "/src/web/", want: "web", src: project.FromFolder},
		{name: "env over folder", env: "Billing API", dir: "/src/api", want: "billing-api", src: project.FromEnv},
		{name: "flag over env", flag: "Front_End", env: "billing", dir: "/src/api", want: "front-end", src: project.FromFlag},
		{name: "empty flag falls through", flag: "", env: "", dir: "/src/api", want: "api", src: project.FromFolder},
		{name: "digits", flag: "2024", dir: "/x", want: "2024", src: project.FromFlag},
		{name: "80 characters", flag: strings.Repeat("b", 80), dir: "/x", want: strings.Repeat("b", 80), src: project.FromFlag},

		{name: "nothing left", flag: "!!!", dir: "/x", errHas: "normalises to nothing"},
		{name: "blank flag", flag: "  ", env: "billing", dir: "/src/api", errHas: "blank"},
		{name: "blank env", env: " \t", dir: "/src/api", errHas: "blank"},
		{name: "folder with no letters", dir: "/src/___", errHas: "normalises to nothing", errHasSource: true},
		{name: "root folder", dir: "/", errHas: "normalises to nothing", errHasSource: true},
		{name: "one character", flag: "x", dir: "/x", errHas: "at least 2"},
		{name: "slash", flag: "a/b", dir: "/x", errHas: "path separator"},
		{name: "backslash", env: `a\b`, dir: "/x", errHas: "path separator"},
		{name: "dot dot", flag: "..", dir: "/x", errHas: `".."`},
		{name: "dot dot inside", flag: "a..b", dir: "/x", errHas: `".."`},
		{name: "control character", flag: "a\x1bb", dir: "/x", errHas: "control character"},
		{name: "newline", env: "a\nb", dir: "/x", errHas: "control character"},
		{name: "over 80 given", flag: long, dir: "/x", errHas: "81 characters"},
		{name: "over 80 from folder", dir: "/src/" + long, errHas: "81 characters", errHasSource: true},
		{name: "invalid UTF-8", flag: "a\xffb", dir: "/x", errHas: "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, src, err := project.ResolveID(tc.flag, tc.env, filepath.FromSlash(tc.dir))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("ResolveID = %q, %v; want an error with %q", id, err, tc.errHas)
				}
				var ie *project.IDError
				if !errors.As(err, &ie) {
					t.Fatalf("error %T is not an *IDError", err)
				}
				if tc.errHasSource && !strings.Contains(err.Error(), "--id") {
					t.Errorf("a refused folder name does not suggest --id: %v", err)
				}
				return
			}
			if err != nil || id != tc.want || src != tc.src {
				t.Fatalf("ResolveID = %q, %q, %v; want %q from %q", id, src, err, tc.want, tc.src)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"My Project!": "my-project", "other_repo": "other-repo", "API": "api", "a--b": "a-b",
		"-lead": "lead", "trail-": "trail", "": "", "   ": "", "x/y": "x-y",
	} {
		if got := project.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// The store is owner-only in the given folder, finds a project from a
// subfolder, and keeps every writer's change when many update at once.
func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crosschat-relay")
	s := project.Open(dir)
	if ps, err := s.List(); err != nil || len(ps) != 0 {
		t.Fatalf("empty store: %v %v", ps, err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(func(ps []project.Project) ([]project.Project, bool, error) {
				return append(ps, project.Project{ID: fmt.Sprintf("p%02d", i), Dir: filepath.Join("/src", fmt.Sprintf("p%02d", i)), Token: "cca_x"}), true, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ps, err := s.List()
	if err != nil || len(ps) != 20 {
		t.Fatalf("after 20 concurrent updates: %d projects, %v", len(ps), err)
	}
	p, ok, err := s.Find(filepath.Join("/src", "p07", "internal", "x"))
	if err != nil || !ok || p.ID != "p07" {
		t.Fatalf("Find from a subfolder: %+v %v %v", p, ok, err)
	}
	if _, ok, _ := s.Find("/elsewhere"); ok {
		t.Fatal("Find matched an unregistered folder")
	}
	if p, ok, _ := s.Get("p13"); !ok || p.Dir != filepath.Join("/src", "p13") {
		t.Fatalf("Get: %+v %v", p, ok)
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{dir: 0o700, s.Path(): 0o600} {
			st, err := os.Stat(path)
			if err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
			}
		}
	}
	if l, err := filelock.Lock(filepath.Join(dir, project.LockFile)); err != nil {
		t.Errorf("the store's lock is still held after Update: %v", err)
	} else {
		l.Unlock()
	}
	// A refusal from the update writes nothing.
	before, _ := os.ReadFile(s.Path())
	err = s.Update(func(ps []project.Project) ([]project.Project, bool, error) { return nil, true, errors.New("no") })
	after, _ := os.ReadFile(s.Path())
	if err == nil || string(before) != string(after) {
		t.Fatalf("a failed update changed the file: %v", err)
	}
	// A damaged file is reported, not overwritten.
	if err := os.WriteFile(s.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged store: %v", err)
	}
}
