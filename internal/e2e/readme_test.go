package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines bounds README.md: it says what the relay is and where to
// go next; the detail lives in docs/.
const maxReadmeLines = 300

// ciTestCommand reads from .ci/run the label of the test command it runs:
// the first check after the heading "the test command".
func ciTestCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	check := regexp.MustCompile(`^check "([^"]+)" `)
	section := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "# ---") {
			section = strings.Contains(line, "the test command")
		}
		if m := check.FindStringSubmatch(line); section && m != nil {
			return m[1]
		}
	}
	t.Fatal(`.ci/run has no check under "the test command"`)
	return ""
}

// Ensure README.md stays a front door of at most maxReadmeLines lines that
// gives, in a code block, the test command CI runs.
func TestReadmeFrontDoor(t *testing.T) {
	text, _ := readDoc(t, filepath.Join(repoRoot, "README.md"))
	if n := strings.Count(text, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail to docs/", n, maxReadmeLines)
	}
	cmd := ciTestCommand(t)
	inFence, found := false, false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence && (line == cmd || strings.HasPrefix(line, cmd+" ")) {
			found = true
		}
	}
	if !found {
		t.Errorf("README.md gives no %q in a code block, the test command .ci/run runs", cmd)
	}
}
