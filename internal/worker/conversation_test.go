//go:build unix

package worker_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A run gets its task's conversation in CROSSCHAT_CONVERSATION_ID (the
// first task's id, not the run's own), and its prompt counts the hand-offs
// left from the conversation's hops.
func TestRunEnvironmentCarriesConversation(t *testing.T) {
	e := newEnv(t, nil)
	root, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: operator, RecipientSlug: stranger, Title: "root", Instructions: "start"})
	if err != nil {
		t.Fatal(err)
	}
	child, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: operator, RecipientSlug: builder, Title: "Print the environment",
		Instructions: "Please do it. MODE:env", ParentTaskID: root.ID})
	if err != nil {
		t.Fatal(err)
	}
	if child.ConversationID != root.ID || child.Hops != 1 {
		t.Fatalf("child conversation %q hops %d, want %q and 1", child.ConversationID, child.Hops, root.ID)
	}
	e.start()
	got := e.finished(child.ID)
	r := lastReport(got).Result
	if !strings.Contains(r, "CROSSCHAT_CONVERSATION_ID="+root.ID+"\n") {
		t.Errorf("environment lacks CROSSCHAT_CONVERSATION_ID=%s:\n%s", root.ID, r)
	}
	// The relay's connection bypasses any proxy (noProxy).
	for _, name := range []string{"NO_PROXY", "no_proxy"} {
		if !regexp.MustCompile(`(?m)^` + name + `=127\.0\.0\.1$`).MatchString(r) {
			t.Errorf("environment lacks %s=127.0.0.1 (the relay's host):\n%s", name, r)
		}
	}
	if _, in := e.harness.lastRequest(t); in.HandOffsLeft != relay.DefaultChainLimit-1 {
		t.Errorf("hand-offs left %d, want %d", in.HandOffsLeft, relay.DefaultChainLimit-1)
	}
}
