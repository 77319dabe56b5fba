package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each top-level verb has a file of its own, named for it (claude-plugin:
// claude_plugin.go), and that file holds the function the verb runs
// (claudePluginCmd); a function named as a verb's (…Cmd) lives nowhere
// else. A verb added to the dispatcher in some other file fails here.
func TestOneFileAVerb(t *testing.T) {
	fset := token.NewFileSet()
	cmdFile := map[string]string{} // function name -> file that defines it
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasSuffix(fn.Name.Name, "Cmd") {
				cmdFile[fn.Name.Name] = f
			}
		}
	}
	verbOfFunc := map[string]string{}
	for name := range dispatch() {
		fn := verbFunc(name)
		verbOfFunc[fn] = name
		want := strings.ReplaceAll(name, "-", "_") + ".go"
		got, ok := cmdFile[fn]
		switch {
		case !ok:
			t.Errorf("verb %q: no function %s (want it in %s)", name, fn, want)
		case got != want:
			t.Errorf("verb %q: %s is in %s, want it in %s", name, fn, got, want)
		}
	}
	for fn, f := range cmdFile {
		if _, ok := verbOfFunc[fn]; !ok {
			t.Errorf("%s (in %s) is named as a verb's function, but no verb runs it", fn, f)
		}
	}
}

// verbFunc is the function a verb runs: claude-plugin -> claudePluginCmd.
func verbFunc(verb string) string {
	parts := strings.Split(verb, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "") + "Cmd"
}
