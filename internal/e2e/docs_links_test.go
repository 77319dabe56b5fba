package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The links between the docs, and the tests they cite as evidence, lead
// somewhere: a renamed heading or a moved test fails here.

// mdLink finds a Markdown link's target: "](target)".
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// dropped (hyphens and underscores kept), spaces turned into hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Ensure every relative link of a doc leads to a file of the repository
// and, when it names a heading, to a heading of that file.
func TestDocsLinksResolve(t *testing.T) {
	docs := map[string]string{} // module-relative path → text
	for _, f := range docFiles(t) {
		text, rel := readDoc(t, f)
		docs[rel] = text
	}
	// Code spans are blanked before links are read, so the anchors of
	// headings with code in them are computed from the raw heading.
	rawAnchors := func(text string) map[string]bool {
		seen := map[string]int{}
		out := map[string]bool{}
		inFence := false
		for line := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
			}
			h := strings.TrimLeft(line, "#")
			if inFence || h == line || !strings.HasPrefix(h, " ") {
				continue
			}
			a := anchor(h)
			if n := seen[a]; n > 0 {
				out[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
		return out
	}
	links := 0
	for rel, text := range docs {
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, frag, _ := strings.Cut(target, "#")
			path := rel
			if file != "" {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), file)))
			}
			b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
			if err != nil {
				t.Errorf("%s links to %s: no such file", rel, target)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !rawAnchors(string(b))[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", rel, target, path, frag)
			}
		}
	}
	if links < 20 {
		t.Fatalf("found only %d relative links; is the pattern broken?", links)
	}
}

// Ensure headings get GitHub's fragments.
func TestDocsAnchor(t *testing.T) {
	tests := []struct{ heading, want string }{
		{" Metrics for Prometheus", "metrics-for-prometheus"},
		{" `crosschat-relay register [DIR] [--id ID]`", "crosschat-relay-register-dir---id-id"},
		{" The mesh: cross-relay figures", "the-mesh-cross-relay-figures"},
		{" Hand-off of a posted task to a waiting claim", "hand-off-of-a-posted-task-to-a-waiting-claim"},
		{" One long-poll path: a select on the request's goroutine", "one-long-poll-path-a-select-on-the-requests-goroutine"},
		{" Channels on Claude Code 2.1.332 and later", "channels-on-claude-code-21332-and-later"},
	}
	for _, tc := range tests {
		if got := anchor(tc.heading); got != tc.want {
			t.Errorf("anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// testRef finds a test the docs name: "internal/worker/TestRunGetsCheckedPaths"
// (a package and its test) or `TestRunGetsCheckedPaths` (any package's).
var (
	pkgTestRef  = regexp.MustCompile(`(?:^|[^\w/.-])((?:internal|app)(?:/[a-z0-9_]+)*)/((?:Test|Fuzz|Benchmark)[A-Z]\w*)`)
	bareTestRef = regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Z]\\w*)`")
	testFunc    = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Z]\w*)\(`)
)

// Ensure every test the docs cite as evidence exists, in the package named.
func TestDocsTestNamesExist(t *testing.T) {
	byPkg := map[string]map[string]bool{} // module-relative folder → test names
	all := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if byPkg[pkg] == nil {
			byPkg[pkg] = map[string]bool{}
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			byPkg[pkg][m[1]], all[m[1]] = true, true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	for _, f := range docFiles(t) {
		text, rel := readDoc(t, f)
		for _, m := range pkgTestRef.FindAllStringSubmatch(text, -1) {
			cited++
			if !byPkg[m[1]][m[2]] {
				t.Errorf("%s cites %s/%s, which is not a test of %s", rel, m[1], m[2], m[1])
			}
		}
		for _, m := range bareTestRef.FindAllStringSubmatch(text, -1) {
			cited++
			if !all[m[1]] {
				t.Errorf("%s cites %s, which no test file defines", rel, m[1])
			}
		}
	}
	if cited < 20 {
		t.Fatalf("the docs cite only %d tests; is the pattern broken?", cited)
	}
}
