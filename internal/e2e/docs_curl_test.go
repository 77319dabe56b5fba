package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// curlBlock is the shell block of docs/agents.md's "Call a tool without an
// MCP client".
func curlBlock(t *testing.T) string {
	t.Helper()
	text, _ := readDoc(t, filepath.Join(repoRoot, "docs", "agents.md"))
	_, after, ok := strings.Cut(text, "### Call a tool without an MCP client")
	if !ok {
		t.Fatal(`docs/agents.md has no "Call a tool without an MCP client"`)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("no sh block under it")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok || !strings.Contains(block, "curl ") {
		t.Fatalf("the block is not a curl command: %q", block)
	}
	return block
}

// Ensure the curl command docs/agents.md gives, run by sh as written
// (only the relay's address put in for the default one), answers whoami
// for the token in CROSSCHAT_TOKEN, as the doc says the answer reads.
func TestCurlToolCallFromDocs(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	block := curlBlock(t)
	if !strings.Contains(block, "http://localhost:4318/mcp") {
		t.Fatalf("the block does not name the default address: %q", block)
	}
	r := startRelay(t, filepath.Join(t.TempDir(), "data"))
	rev, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "builder", DisplayName: "Builder", ModelSlug: "m", Capabilities: []string{"text-output"}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(block, "http://localhost:4318", r.Config().BaseURL()))
	cmd.Env = append(os.Environ(), "CROSSCHAT_TOKEN="+rev.Token)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the doc's curl: %v\n%s", err, out)
	}
	var resp struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent struct {
				Kind  string `json:"kind"`
				Agent struct {
					Slug string `json:"slug"`
				} `json:"agent"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("the answer is not one JSON object: %v\n%s", err, out)
	}
	sc := resp.Result.StructuredContent
	if sc.Kind != "agent" || sc.Agent.Slug != "builder" || resp.Result.IsError || len(resp.Result.Content) != 1 ||
		!strings.Contains(resp.Result.Content[0].Text, `"slug":"builder"`) {
		t.Fatalf("whoami through the doc's curl: %s", out)
	}
}
