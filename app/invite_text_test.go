package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure the invite message carries what an agent needs to enroll itself.
func TestInviteMessage(t *testing.T) {
	inv := relay.Invite{ExpiresAt: relay.FormatTime(time.Now().Add(time.Hour)), MaxUses: 5, DisplayName: "Ada", FirstTask: &relay.FirstTask{Title: "Say hi"}}
	msg := app.InviteMessage("http://localhost:4318", "cci_code", inv, time.UTC)
	for _, want := range []string{"cci_code", "http://localhost:4318/api/enroll", "for up to 5 agents", "Ada", "Say hi", "claim_next_task", "Invoke-RestMethod", "curl -sS"} {
		if !strings.Contains(msg, want) {
			t.Errorf("invite message lacks %q", want)
		}
	}
}
