package e2e_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/crosschat/crosschat-relay/"

// homes gives each third-party library the one package allowed to import it
// (besides main and the composition root, app and its subpackages, for
// Wails).
var homes = map[string]string{
	"github.com/mattn/go-sqlite3":       "internal/store",
	"github.com/mark3labs/mcp-go":       "internal/mcp",
	"github.com/fsnotify/fsnotify":      "internal/watch",
	"github.com/emersion/go-autostart":  "internal/desktop",
	"github.com/wailsapp/wails":         "app",
	"golang.org/x/sys/windows/registry": "internal/desktop",
	"github.com/nats-io/nats.go":        "internal/mesh",
	"github.com/nats-io/nats-server":    "internal/mesh",
	"github.com/nats-io/nkeys":          "internal/mesh",
	"golang.org/x/crypto/bcrypt":        "internal/mesh",
	"golang.org/x/text":                 "internal/mesh",
	"github.com/godbus/dbus":            "internal/desktop",
	"fyne.io/systray":                   "internal/desktop",
	"github.com/prometheus/":            "internal/metrics",
	"github.com/landlock-lsm/":          "internal/sandbox",
	"golang.org/x/net/":                 "internal/sandbox",
}

// Ensure the layering of docs/architecture.md: relay imports only the standard
// library, and none of its edges (net/http, os, database/sql, …); adapters
// import relay and their own library, never each other (a contract package
// such as internal/runspec carries what two of them share); only app and
// main wire adapters together; each library has one home.
func TestImportRules(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	root := filepath.Join("..", "..") // the module root, from internal/e2e
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "frontend" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if msg := violation(pkg, p); msg != "" {
				t.Errorf("%s imports %s: %s", path, p, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files; is the walk broken?", checked)
	}
}

// edgeStd are the standard-library packages of the edges (network, files,
// processes, databases, markup, logging): the domain imports none of them,
// a prefix covering its subpackages ("net" covers "net/http").
var edgeStd = []string{"net", "os", "syscall", "database", "html", "log", "plugin", "unsafe"}

// contracts are the packages that carry a contract between two adapters
// that may not import each other: the contract imports only the domain,
// and only the adapters named here (and the composition root) import it.
var contracts = map[string][]string{
	"internal/runspec": {"internal/worker", "internal/harness", "internal/sandbox"},
	// The relay's client side: the CLI verbs' calls, and the MCP tool call
	// the load generator sends over its own connections.
	"internal/client": {"internal/bench"},
}

// leaves are small helpers that import only the standard library, its
// system calls (golang.org/x/sys) and other leaves; any package may import
// them.
var leaves = []string{"internal/loopback", "internal/tick", "internal/poll", "internal/testkit", "internal/project", "internal/realdir", "internal/procstat", "internal/plantguard", "internal/filelock"}

// testOnly are the helpers only tests import (the walk reads no _test.go
// file, so any import of one it sees is refused): the leaves poll and
// testkit, and app/apptest, which starts whole relays as the composition
// root does.
var testOnly = []string{"internal/poll", "internal/testkit", "app/apptest"}

// violation says why package pkg (a path from the module root) may not
// import imp, or "" when it may.
func violation(pkg, imp string) string {
	std := !strings.Contains(strings.Split(imp, "/")[0], ".")
	composition := pkg == "." || pkg == "app" || pkg == "app/cli" || pkg == "app/benchrun" || pkg == "app/shell" || pkg == "app/apptest"
	if std {
		if pkg == "internal/relay" {
			for _, e := range edgeStd {
				if imp == e || strings.HasPrefix(imp, e+"/") {
					return "the domain imports no edge of the standard library (" + e + ")"
				}
			}
		}
		return ""
	}
	if slices.Contains(leaves, pkg) && !slices.Contains(leaves, strings.TrimPrefix(imp, module)) && !strings.HasPrefix(imp, "golang.org/x/sys/") {
		return "a leaf helper imports only the standard library, x/sys and other leaves"
	}
	if strings.HasPrefix(imp, module) {
		target := strings.TrimPrefix(imp, module)
		users, contract := contracts[target]
		_, pkgContract := contracts[pkg]
		switch {
		case slices.Contains(testOnly, target):
			return "only tests import this helper"
		case target == "app/shell" && pkg != ".":
			return "only main starts the desktop shell"
		case pkg == "internal/relay":
			return "the domain imports only the standard library"
		case slices.Contains(leaves, target):
			return ""
		case pkgContract && target != "internal/relay":
			return "a contract package imports only internal/relay"
		case composition, target == "internal/relay":
			return ""
		case contract && slices.Contains(users, pkg):
			return ""
		case contract:
			return "only " + strings.Join(users, " and ") + " import this contract"
		default:
			return "adapters import only internal/relay; app wires them together"
		}
	}
	if pkg == "internal/relay" {
		return "the domain imports only the standard library"
	}
	if _, ok := contracts[pkg]; ok {
		return "a contract package imports only internal/relay and the standard library"
	}
	for lib, home := range homes {
		if strings.HasPrefix(imp, lib) {
			if pkg == home || (lib == "github.com/wailsapp/wails" && composition) {
				return ""
			}
			return "this library's home is " + home
		}
	}
	return ""
}

// Ensures the rules themselves: each case is one import that must pass or
// must be refused, so a rule that stops firing fails here even while the
// tree itself is clean.
func TestViolation(t *testing.T) {
	tests := []struct {
		pkg, imp string
		refused  bool
	}{
		{"internal/relay", "strings", false},
		{"internal/relay", "crypto/sha256", false},
		{"internal/relay", "net/http", true},
		{"internal/relay", "net", true},
		{"internal/relay", "os", true},
		{"internal/relay", "os/exec", true},
		{"internal/relay", "database/sql", true},
		{"internal/relay", "html/template", true},
		{"internal/relay", "log/slog", true},
		{"internal/relay", "syscall", true},
		{"internal/relay", "network/fake", false}, // a prefix stops at a path element
		{"internal/relay", module + "internal/store", true},
		{"internal/relay", "github.com/mattn/go-sqlite3", true},
		{"internal/web", "net/http", false},
		{"internal/web", module + "internal/relay", false},
		{"internal/web", module + "internal/store", true},
		{"internal/worker", module + "internal/harness", true},
		{"internal/harness", module + "internal/worker", true},
		{"internal/worker", module + "internal/runspec", false},
		{"internal/harness", module + "internal/runspec", false},
		{"internal/web", module + "internal/runspec", true},
		{"internal/sandbox", module + "internal/runspec", false},
		{"internal/sandbox", "github.com/landlock-lsm/go-landlock/landlock", false},
		{"internal/worker", "github.com/landlock-lsm/go-landlock/landlock", true},
		{"internal/worker", module + "internal/sandbox", true},
		{"internal/sandbox", "golang.org/x/net/bpf", false},
		{"internal/worker", "golang.org/x/net/bpf", true},
		{"internal/config", "golang.org/x/sys/windows", false},
		{"internal/config", "golang.org/x/sys/windows/registry", true},
		{"app", module + "internal/sandbox", false},
		{"internal/runspec", module + "internal/relay", false},
		{"internal/runspec", module + "internal/worker", true},
		{"internal/runspec", "github.com/mattn/go-sqlite3", true},
		{"internal/runspec", "os", false},
		{"app", module + "internal/store", false},
		{"app", module + "internal/runspec", false},
		{".", module + "app", false},
		{"internal/store", "github.com/mattn/go-sqlite3", false},
		{"internal/web", "github.com/mattn/go-sqlite3", true},
		{"internal/mcp", "github.com/mark3labs/mcp-go/server", false},
		{"internal/web", "github.com/mark3labs/mcp-go/server", true},
		{"app", "github.com/wailsapp/wails/v2", false},
		{"internal/web", module + "internal/loopback", false},
		{"internal/relay", module + "internal/tick", true},
		{"internal/tick", "time", false},
		{"internal/tick", module + "internal/relay", true},
		{"internal/loopback", "github.com/mattn/go-sqlite3", true},
		{"internal/filelock", "golang.org/x/sys/unix", false},
		{"internal/filelock", "golang.org/x/text/cases", true},
		{"internal/project", module + "internal/filelock", false},
		{"internal/project", module + "internal/relay", true},
		{"internal/project", module + "internal/store", true},
		{"internal/web", "github.com/wailsapp/wails/v2", true},
		{"internal/testkit", "bytes", false},
		{"internal/testkit", module + "internal/relay", true},
		{"app", module + "internal/testkit", true},
		{"internal/web", module + "internal/poll", true},
		{"app/apptest", module + "app", false},
		{"app/apptest", module + "internal/config", false},
		{"app", module + "app/apptest", true},
		{".", module + "app/apptest", true},
		{".", module + "app/shell", false},
		{"app/shell", module + "app", false},
		{"app/shell", module + "internal/desktop", false},
		{"app/shell", "github.com/wailsapp/wails/v2/pkg/menu", false},
		{"app/cli", module + "app/shell", true},
		{"app/benchrun", module + "app", false},
		{"app/benchrun", module + "internal/bench", false},
		{"app/benchrun", module + "internal/store", false},
		{"app/cli", module + "app/benchrun", false},
		{"app/benchrun", module + "app/shell", true},
		{"internal/bench", module + "app/benchrun", true},
		{"app", module + "app/shell", true},
		{"internal/desktop", module + "app/shell", true},
	}
	for _, tt := range tests {
		t.Run(tt.pkg+" imports "+tt.imp, func(t *testing.T) {
			msg := violation(tt.pkg, tt.imp)
			if refused := msg != ""; refused != tt.refused {
				t.Fatalf("refused = %v (%q), want %v", refused, msg, tt.refused)
			}
		})
	}
}
