package e2e_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/crosschat/crosschat-relay/"

// homes gives each third-party library the one package allowed to import it
// (besides main and app, the composition root, for Wails).
var homes = map[string]string{
	"github.com/mattn/go-sqlite3":       "internal/store",
	"github.com/mark3labs/mcp-go":       "internal/mcp",
	"github.com/fsnotify/fsnotify":      "internal/watch",
	"github.com/emersion/go-autostart":  "internal/desktop",
	"github.com/wailsapp/wails":         "app",
	"golang.org/x/sys/windows/registry": "internal/desktop",
	"github.com/nats-io/nats.go":        "internal/mesh",
	"github.com/nats-io/nats-server":    "internal/mesh",
}

// Ensure the layering of DESIGN.md: relay imports only the standard
// library; adapters import relay and their own library, never each other;
// only app and main wire adapters together; each library has one home.
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

func violation(pkg, imp string) string {
	std := !strings.Contains(strings.Split(imp, "/")[0], ".")
	if std {
		return ""
	}
	composition := pkg == "." || pkg == "app"
	if strings.HasPrefix(imp, module) {
		target := strings.TrimPrefix(imp, module)
		switch {
		case pkg == "internal/relay":
			return "the domain imports only the standard library"
		case composition, target == "internal/relay":
			return ""
		default:
			return "adapters import only internal/relay; app wires them together"
		}
	}
	if pkg == "internal/relay" {
		return "the domain imports only the standard library"
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
