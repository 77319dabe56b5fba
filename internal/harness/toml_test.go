package harness_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
)

// Ensures ReplaceTOMLTable on each testdata/toml/<case>.toml: the golden
// file holds the edited text, or the error for a file it must leave alone.
// Every case replaces mcp_servers.crosschat.
func TestReplaceTOMLTableGolden(t *testing.T) {
	const table = "[mcp_servers.crosschat]\nurl = \"http://new/mcp\"\n"
	eachCase(t, "toml", ".toml", 10, func(t *testing.T, name string, b []byte) {
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
