package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
)

// Ensures ReplaceTOMLTable on each testdata/toml/<case>.toml: the golden
// file holds the edited text, or the error for a file it must leave alone.
// Every case replaces mcp_servers.crosschat.
func TestReplaceTOMLTableGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "toml", "*.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 10 {
		t.Fatalf("found %d cases; is testdata/toml there?", len(inputs))
	}
	const table = "[mcp_servers.crosschat]\nurl = \"http://new/mcp\"\n"
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".toml")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := harness.ReplaceTOMLTable(string(b), "mcp_servers.crosschat", table)
			got := "## text\n" + out
			if err != nil {
				if out != "" {
					t.Errorf("an error with text %q", out)
				}
				got = "## error\n" + err.Error() + "\n"
			}
			golden(t, "toml/"+name+".golden", []byte(got))
		})
	}
}
