package e2e_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// The docs of record are README.md and docs/*.md. These tests keep them
// true to the tree: every Go path they name exists, nothing cites a design
// note or an issue tracker a reader of the repository cannot open, tables
// stay readable, and the README stays a front door.

// maxTableRow bounds one Markdown table row, in characters: a row longer
// than this holds a paragraph, which belongs in the text under the table.
const maxTableRow = 500

// repoRoot is the module root, from internal/e2e.
var repoRoot = filepath.Join("..", "..")

// docFiles lists README.md and docs/*.md, relative to the module root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(repoRoot, "README.md")}, files...)
	if len(files) < 5 {
		t.Fatalf("found only %d docs; is the module root wrong?", len(files))
	}
	return files
}

// readDoc returns a doc's text and its name relative to the module root.
func readDoc(t *testing.T, path string) (string, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(repoRoot, path)
	return string(b), filepath.ToSlash(rel)
}

// goPath finds a Go file path under internal/ or app/ (a glob such as
// app/shell_*.go included), not as the tail of a longer path.
var goPath = regexp.MustCompile(`(?:^|[^\w/.-])(?:\.\./)*((?:internal|app)/[\w.*/-]*\.go)\b`)

// goPaths returns the internal/… and app/… Go paths text names.
func goPaths(text string) []string {
	var paths []string
	for _, m := range goPath.FindAllStringSubmatch(text, -1) {
		paths = append(paths, m[1])
	}
	return paths
}

// Ensure every internal/….go and app/….go path (or glob) the docs name
// matches a file of the repository.
func TestDocsPathsExist(t *testing.T) {
	named := 0
	for _, f := range docFiles(t) {
		text, rel := readDoc(t, f)
		for _, p := range goPaths(text) {
			named++
			matches, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(p)))
			if err != nil || len(matches) == 0 {
				t.Errorf("%s names %s, which is not in the repository", rel, p)
			}
		}
	}
	if named < 20 {
		t.Fatalf("the docs name only %d Go paths; is the pattern broken?", named)
	}
}

// Ensure the path pattern finds what a doc names and nothing else.
func TestDocsGoPathPattern(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"the writer (`internal/store/tx.go`)", []string{"internal/store/tx.go"}},
		{"internal/store/tx.go at the start", []string{"internal/store/tx.go"}},
		{"the shell (`app/shell_*.go`) and app/cli/bench*.go", []string{"app/shell_*.go", "app/cli/bench*.go"}},
		{"[run](../internal/worker/run.go)", []string{"internal/worker/run.go"}},
		{"a Go package internal/store, no file", nil},
		{"store/mesh_ids.go, relative to internal", nil},
		{"frontend/src/app/main.go is not ours", nil},
		{"app/main.gopher", nil},
	}
	for _, tc := range tests {
		got := goPaths(tc.text)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("goPaths(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// codeSpan and fence mark what is code in Markdown: an issue number is
// looked for in the prose only, so a colour or a shell comment is not one.
var (
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// linkTarget is the target of a Markdown link, "](#anchor)".
	linkTarget = regexp.MustCompile(`\]\([^)\s]*\)`)
	// issueRef is a reference to an issue or pull request: "#43" standing
	// as a word (not a link's target "](#43)", not an entity "&#8212;",
	// not a colour "#fff"), or "issue 43", "issues #9 and #33", "PR 12".
	issueRef = regexp.MustCompile(`(?i)(?:^|[\s(\[,;])#\d+(?:[^\w-]|$)|\b(?:issues?|pull requests?|PRs?)\s+#?\d+\b`)
)

// prose strips fenced code blocks, inline code spans and link targets from
// Markdown.
func prose(text string) string {
	var b strings.Builder
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			b.WriteString("\n")
			continue
		}
		if !inFence {
			b.WriteString(linkTarget.ReplaceAllString(codeSpan.ReplaceAllString(line, "``"), "]()"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// issueRefs returns the issue references in the prose of a Markdown text,
// with the number of the line each is on.
func issueRefs(text string) []string {
	var refs []string
	for i, line := range strings.Split(prose(text), "\n") {
		for _, m := range issueRef.FindAllString(line, -1) {
			refs = append(refs, fmt.Sprintf("line %d: %q", i+1, strings.TrimSpace(m)))
		}
	}
	return refs
}

// Ensure no doc cites an issue by its number: the tracker is not part of
// the repository, and a doc says what is, not which request asked for it.
func TestDocsCiteNoIssues(t *testing.T) {
	for _, f := range docFiles(t) {
		text, rel := readDoc(t, f)
		for _, r := range issueRefs(text) {
			t.Errorf("%s cites an issue, %s: say what is meant instead", rel, r)
		}
	}
}

// Ensure the issue pattern flags references and leaves anchors, colours,
// entities and code alone.
func TestDocsIssuePattern(t *testing.T) {
	tests := []struct {
		text    string
		flagged bool
	}{
		{"issue #9 set the targets", true},
		{"as #43 asked", true},
		{"#43 at the start of a line", true},
		{"the long-poll rework (#33)", true},
		{"targets (#9; #33 later)", true},
		{"see [#33](https://example.com/issues/33)", true},
		{"filed as issue 43", true},
		{"Issue 9 measured it", true},
		{"issues 9 and 33", true},
		{"PR #12 fixed it", true},
		{"the fix, pull request 7", true},
		{"see #9's figures", true},
		{"[one long-poll path](#one-long-poll-path)", false},
		{"[steps](#3-steps-to-connect)", false},
		{"[the figures](performance.md#9-items)", false},
		{"[a link](#43)", false},
		{"a dash &#8212; here", false},
		{"the text colour is #fff on #1a2b3c", false},
		{"the colour `#333`", false},
		{"```\ncolor: #333; # 9 comment\n#42\n```", false},
		{"### 9. A numbered heading", false},
		{"the second issue is worth a look", false},
		{"a PR's title", false},
		{"up to 32 capabilities", false},
	}
	for _, tc := range tests {
		got := len(issueRefs(tc.text)) > 0
		if got != tc.flagged {
			t.Errorf("issueRefs(%q) flagged = %v, want %v", tc.text, got, tc.flagged)
		}
	}
}

// Ensure no table row of a doc runs past maxTableRow characters.
func TestDocsTableRowsShort(t *testing.T) {
	for _, f := range docFiles(t) {
		text, rel := readDoc(t, f)
		for i, line := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(line); strings.HasPrefix(line, "|") && n > maxTableRow {
				t.Errorf("%s line %d: a table row of %d characters (at most %d): move the detail under the table", rel, i+1, n, maxTableRow)
			}
		}
	}
}

// treeIssueRef is an issue cited by number anywhere in the tree ("issue
// #9"): narrower than issueRef, as code says "#" for other things.
var treeIssueRef = regexp.MustCompile(`(?i)\bissues? #\d+`)

// Ensure nothing in the repository cites the design note kept outside it
// (name below) or an issue by number ("issue #9"): docs, comments and
// tests say what they mean instead.
func TestDocsCiteNoDesignNote(t *testing.T) {
	name := []byte("DESIGN" + ".md") // split, so this file does not cite it
	checked := 0
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // a binary file (an image, a database in testdata)
		}
		checked++
		rel, _ := filepath.Rel(repoRoot, path)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1)
		for n := 1; sc.Scan(); n++ {
			if bytes.Contains(sc.Bytes(), name) {
				t.Errorf("%s:%d cites %s, which is not in the repository: say what is meant", filepath.ToSlash(rel), n, name)
			}
			// This file's own examples of issue references are exempt.
			if m := treeIssueRef.Find(sc.Bytes()); m != nil && filepath.ToSlash(rel) != "internal/e2e/docs_test.go" {
				t.Errorf("%s:%d cites %q, which a reader of the repository cannot open: say what is meant", filepath.ToSlash(rel), n, m)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files; is the walk broken?", checked)
	}
}

// Ensure each doc in docs/ opens, under its title, with a paragraph that
// says whom it is for.
func TestDocsOpenWithReader(t *testing.T) {
	for _, f := range docFiles(t)[1:] {
		text, rel := readDoc(t, f)
		lines := strings.Split(text, "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || lines[1] != "" {
			t.Errorf("%s does not open with a title and a blank line", rel)
			continue
		}
		var first []string
		for _, l := range lines[2:] {
			if l == "" {
				break
			}
			first = append(first, l)
		}
		p := strings.Join(first, " ")
		if !strings.HasPrefix(p, "For ") || strings.HasPrefix(p, "#") {
			t.Errorf("%s opens with %.80q; its first paragraph starts \"For …\": whom it is for and what it answers", rel, p)
		}
	}
}
