package cli

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
)

// Ensure docs/cli.md keeps up with the verbs: each verb of the help table
// has a table row or a paragraph of the page naming it, which names each
// of the verb's own flags; every flag of serve and every environment variable
// any help names is somewhere on the page (bench's flags may be in
// docs/performance.md instead, with its figures). The page had fallen behind
// (claude-plugin, mesh names, tasks list --limit, monitor --url, ...).
func TestCLIDocNamesEveryVerbAndFlag(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	b, err = os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	perf := string(b)
	// The page's units: each table row, and each paragraph as one.
	var lines []string
	para := ""
	for _, l := range strings.Split(doc+"\n", "\n") {
		switch {
		case strings.HasPrefix(l, "|"):
			lines = append(lines, l)
		case strings.TrimSpace(l) == "":
			if para != "" {
				lines, para = append(lines, para), ""
			}
		default:
			para += l + " "
		}
	}
	flagLine := regexp.MustCompile(`^  (--?[a-z][a-z0-9-]*)`)
	envName := regexp.MustCompile(`\bCROSSCHAT_[A-Z0-9_]+\b`)
	for _, v := range verbTable {
		var out bytes.Buffer
		if v.name == "serve" {
			app.Serve([]string{"--help"}, nil, "test", &out, &out)
			for _, f := range regexp.MustCompile(`(?m)^  --([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out.String(), -1) {
				if !regexp.MustCompile(`--` + regexp.QuoteMeta(f[1]) + `([^a-z0-9-]|$)`).MatchString(doc) {
					t.Errorf("docs/cli.md does not name serve's flag --%s", f[1])
				}
			}
		} else if code := Command(append(strings.Fields(v.name), "--help"), "test", &out, &bytes.Buffer{}); code != 0 {
			t.Fatalf("%s --help: exit %d", v.name, code)
		}
		for _, e := range envName.FindAllString(out.String(), -1) {
			if !strings.Contains(doc, e) {
				t.Errorf("docs/cli.md does not name %s (from %s --help)", e, v.name)
			}
		}
		if v.name == "serve" {
			continue
		}
		group, action, _ := strings.Cut(v.name, " ")
		word := regexp.MustCompile(`\b` + regexp.QuoteMeta(action) + `\b`)
		var rows []string
		for _, l := range lines {
			i := strings.Index(l, "crosschat-relay "+group)
			if i < 0 {
				continue
			}
			if rest := l[i+len("crosschat-relay "+group):]; rest != "" && !strings.ContainsAny(rest[:1], " `|") {
				continue // another verb with this one's name as its start
			}
			if action == "" || word.MatchString(l) {
				rows = append(rows, l)
			}
		}
		if len(rows) == 0 {
			t.Errorf("docs/cli.md has no row or paragraph naming crosschat-relay %s", v.name)
			continue
		}
		if v.name == "bench" {
			rows = append(rows, perf) // its flags are told where its figures are
		}
		own := true
		help := strings.Split(out.String(), "\n")
		for i, l := range help {
			switch {
			case l == "The relay (every verb):":
				own = false
			case l == "Flags:":
				own = true
			}
			m := flagLine.FindStringSubmatch(l)
			if !own || m == nil || (i+1 < len(help) && strings.HasPrefix(strings.TrimSpace(help[i+1]), "internal:")) {
				continue // a flag for the relay's own child processes
			}
			named := false
			for _, r := range rows {
				named = named || regexp.MustCompile(regexp.QuoteMeta(m[1])+`\b`).MatchString(r)
			}
			if !named {
				t.Errorf("docs/cli.md's row or paragraph on %s does not name its flag %s", v.name, m[1])
			}
		}
	}
}
