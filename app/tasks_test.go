package app

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure Show in folder only reveals files a run of the task recorded.
func TestRevealFileRefusesOtherFiles(t *testing.T) {
	r := startInternal(t)
	if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	task, err := r.Services.Tasks.Post(NewTask{RecipientSlug: "bob", Title: "T", Instructions: "I"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Services.Tasks.RevealFile(task.ID, "/etc/passwd"); relay.ErrorCode(err) != relay.EInvalidRequest {
		t.Fatalf("reveal of a file no run made: %v", err)
	}
	if err := r.Services.Tasks.RevealFile("nope", "/etc/passwd"); relay.ErrorCode(err) != relay.EInvalidRequest {
		t.Fatalf("bad task id: %v", err)
	}
}
