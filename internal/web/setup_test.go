package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Ensure the setup snippets and the enroll steps carry what an agent needs.
func TestSetupTexts(t *testing.T) {
	s := web.SetupFor("http://localhost:4318/mcp", "cca_x")
	if !strings.Contains(s.ClaudeCode, `--header "Authorization: Bearer cca_x"`) || !strings.Contains(s.Codex, "--bearer-token-env-var CROSSCHAT_TOKEN") {
		t.Fatalf("setup %+v", s)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(s.JSONSnippet()), &js); err != nil {
		t.Fatal(err)
	}
	next := web.EnrollNext(relay.Enrollment{Agent: relay.Agent{Slug: "a1", DisplayName: "Ada", OwnerSet: relay.OwnerSet{DisplayName: true}}, AssignedTask: &relay.AssignedTask{Title: "Say hi"}})
	joined := strings.Join(next, "\n")
	if !strings.Contains(joined, "Ada") || !strings.Contains(joined, "claim_next_task") || !strings.Contains(joined, "whoami") {
		t.Fatalf("next %v", next)
	}
}
