package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// One idea a file: a file holds one idea, and its name says which (a type
// with its methods; or, when the type is big, its methods in files named
// for their job, as internal/worker's run.go, run_start.go,
// run_supervise.go…; a verb of app/cli). No line count tells a reviewer
// that, so no test counts a file's lines: a file is split when it holds two
// ideas, and two files are one when they hold one. What a test can keep:
//
//   - a file's name is an idea, never a part number or a drawer
//     (TestFileNamesSayTheirIdea);
//   - a package, one job, stays within its size budget
//     (TestPackagesStayInBudget): one that outgrows it has taken on a
//     second job, and is split by job into packages, or its budget is
//     raised here with the reason.

// defaultBudget is the most lines of hand-written Go, tests left out, a
// package holds unless packageBudgets gives it more.
const defaultBudget = 4000

// packageBudgets are the packages allowed more than defaultBudget, each
// with why its one job is that big.
var packageBudgets = map[string]struct {
	lines int
	why   string
}{
	"internal/store":  {8200, "the SQLite adapter: the schema and migrations, the single writer, every query and scan, the mesh's tables (outbox, applied messages, peers, names) and the upstream import; its queries are its job, and no part of it has a caller of its own to leave with"},
	"internal/mesh":   {6500, "the NATS adapter: the embedded server, the stream and the relays' consumers, trust and the name directory (read with direct gets), envelopes of one change and of lists"},
	"internal/relay":  {5500, "the domain: every type, validation and lifecycle rule, the errors and their codes"},
	"app/cli":         {5000, "every verb of the CLI, one file a verb: its flags, usage errors and output (bench's relays are app/benchrun's)"},
	"internal/worker": {4500, "a worker's loop and one run from claim to report, recovery after a crash"},
}

// Ensure every package's hand-written Go (tests and generated files left
// out) fits its budget.
func TestPackagesStayInBudget(t *testing.T) {
	lines := map[string]int{}
	walkGo(t, func(rel string, b []byte) {
		if strings.HasSuffix(rel, "_test.go") || generated(b) {
			return
		}
		lines[filepath.ToSlash(filepath.Dir(rel))] += bytes.Count(b, []byte("\n"))
	})
	if len(lines) < 20 {
		t.Fatalf("only %d packages found; is the walk broken?", len(lines))
	}
	for pkg := range packageBudgets {
		if _, ok := lines[pkg]; !ok {
			t.Errorf("packageBudgets names %s, which has no Go files: remove it", pkg)
		}
	}
	pkgs := make([]string, 0, len(lines))
	for p := range lines {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		budget := defaultBudget
		if b, ok := packageBudgets[pkg]; ok {
			budget = b.lines
		}
		if n := lines[pkg]; n > budget {
			t.Errorf("%s holds %d lines of Go, over its budget of %d: split it by job into packages, or raise its budget in packageBudgets with the reason", pkg, n, budget)
		}
	}
}

// partName matches a file name that is a part or a drawer, not an idea:
// a part number (tx2.go, tasks_3.go; a longer number ending a word, as in
// x509.go, is a name), "more", "misc", "rest", "extra", "part",
// or the package's odds and ends (util.go, helpers.go, common.go).
var partName = regexp.MustCompile(`(^|_)(\d+|more|misc|rest|extra|part\d*|util|utils|helpers|common|stuff)$|[a-z]\d$`)

// Ensure no hand-written Go file (tests left out) is named as a part or a
// drawer: its name says its idea.
func TestFileNamesSayTheirIdea(t *testing.T) {
	var bad []string
	walkGo(t, func(rel string, b []byte) {
		if strings.HasSuffix(rel, "_test.go") || generated(b) {
			return
		}
		if !ideaName(filepath.Base(rel)) {
			bad = append(bad, filepath.ToSlash(rel))
		}
	})
	if len(bad) > 0 {
		t.Errorf("files named as a part or a drawer, not an idea; name each for what it holds, or join it to the file of its idea:\n  %s", strings.Join(bad, "\n  "))
	}
}

// ideaName reports whether a Go file name names an idea: the name without
// .go and without its build constraint suffixes (_linux, _windows_amd64,
// _unix, _other) is not a part or a drawer.
func ideaName(name string) bool {
	s := strings.TrimSuffix(name, ".go")
	for {
		i := strings.LastIndexByte(s, '_')
		if i < 0 || !slices.Contains(platformWords, s[i+1:]) {
			break
		}
		s = s[:i]
	}
	return !partName.MatchString(s)
}

// platformWords are the file name suffixes that pick a platform (Go's own
// and this module's: _unix, _other).
var platformWords = []string{"linux", "windows", "darwin", "freebsd", "unix", "other", "amd64", "arm64", "386"}

// Ensures the name rule itself: each case is a file name that must pass
// or must be refused.
func TestIdeaName(t *testing.T) {
	for _, tt := range []struct {
		name string
		idea bool
	}{
		{"run.go", true},
		{"run_start.go", true},
		{"proc_windows.go", true},
		{"fds_other.go", true},
		{"tray_bus_linux.go", true},
		{"x509.go", true}, // a number of several digits ending a word is a name
		{"sha256_other.go", true},
		{"nofollow_unix.go", true},
		{"tx2.go", false},
		{"tasks_3.go", false},
		{"tasks_more.go", false},
		{"misc.go", false},
		{"util.go", false},
		{"store_helpers.go", false},
		{"run_part2.go", false},
		{"run2_linux.go", false},
	} {
		if got := ideaName(tt.name); got != tt.idea {
			t.Errorf("ideaName(%q) = %v, want %v", tt.name, got, tt.idea)
		}
	}
}

// walkGo calls f with every Go file of the module (its path from the
// module root and its text), leaving out the frontend, node_modules and
// dot folders.
func walkGo(t *testing.T, f func(rel string, b []byte)) {
	t.Helper()
	root := filepath.Join("..", "..") // the module root, from internal/e2e
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || d.Name() == "frontend" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		f(rel, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// generatedHeader is Go's marker of a generated file.
var generatedHeader = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// generated reports whether a Go file's text marks it as generated.
func generated(b []byte) bool { return generatedHeader.Match(b) }
