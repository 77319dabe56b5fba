package project_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/crosschat/crosschat-relay/internal/project"
)

var idShape = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Any id the rules accept is a plain name the relay takes as an agent's
// name, whatever was given: never a path, never a control character.
func FuzzResolveID(f *testing.F) {
	for _, s := range []string{"My Project!", "other_repo", "../api", "a/b", "x\x1by", "..", "日本", strings.Repeat("a", 90), "-", "ab"} {
		f.Add(s, "", "/src/x")
		f.Add("", s, "/src/x")
		f.Add("", "", "/src/"+s)
	}
	f.Fuzz(func(t *testing.T, flag, env, dir string) {
		id, src, err := project.ResolveID(flag, env, dir)
		if err != nil {
			return
		}
		if !idShape.MatchString(id) || len(id) < project.MinIDLen || len(id) > project.MaxIDLen {
			t.Fatalf("ResolveID(%q, %q, %q) = %q", flag, env, dir, id)
		}
		given := map[project.Source]string{project.FromFlag: flag, project.FromEnv: env}[src]
		if src != project.FromFolder && (strings.ContainsAny(given, `/\`) || strings.Contains(given, "..") || strings.IndexFunc(given, unicode.IsControl) >= 0) {
			t.Fatalf("a given id %q from %s was accepted as %q", given, src, id)
		}
		if project.Normalize(id) != id {
			t.Fatalf("%q is not normalised", id)
		}
	})
}
