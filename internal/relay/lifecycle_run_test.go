package relay_test

import (
	"errors"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestActionRunScope: a run token may take the holder's actions on its
// run's task alone, and read or take the sender's actions across the run's
// conversation.
func TestActionRunScope(t *testing.T) {
	want := map[relay.Action]relay.RunScope{
		relay.ActionRenew:          relay.RunOwnTask,
		relay.ActionReport:         relay.RunOwnTask,
		relay.ActionRelease:        relay.RunOwnTask,
		relay.ActionRead:           relay.RunConversation,
		relay.ActionCancel:         relay.RunConversation,
		relay.ActionRequeue:        relay.RunConversation,
		relay.ActionRequestChanges: relay.RunConversation,
	}
	for a, s := range want {
		if got := a.RunScope(); got != s {
			t.Errorf("%s.RunScope() = %d, want %d", a, got, s)
		}
	}
}

// TestRunTokenMay: which task a run token of task "run" reaches in each
// scope, and when it has to read the conversations to know.
func TestRunTokenMay(t *testing.T) {
	tests := []struct {
		name        string
		scope       relay.RunScope
		taskID      string
		run, target string // the conversations read
		want        bool
		reads       bool
	}{
		{"own task, the run's", relay.RunOwnTask, "run", "", "", true, false},
		{"own task, another", relay.RunOwnTask, "other", "c", "c", false, false},
		{"conversation, the run's task", relay.RunConversation, "run", "", "", true, false},
		{"conversation, a task of it", relay.RunConversation, "other", "c", "c", true, true},
		{"conversation, a task of another", relay.RunConversation, "other", "c", "d", false, true},
		{"conversation, the run's task has none", relay.RunConversation, "other", "", "", false, true},
		{"conversation, no task", relay.RunConversation, "", "c", "c", false, false},
		{"never, the run's task", relay.RunNever, "run", "c", "c", false, false},
		{"never, no task", relay.RunNever, "", "", "", false, false},
		{"no scope", relay.RunScope(0), "run", "c", "c", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := false
			got, err := relay.RunTokenMay(tt.scope, "run", tt.taskID, func() (string, string, error) {
				read = true
				return tt.run, tt.target, nil
			})
			if err != nil || got != tt.want || read != tt.reads {
				t.Errorf("RunTokenMay = %v, %v (read %v); want %v (read %v)", got, err, read, tt.want, tt.reads)
			}
		})
	}
	boom := errors.New("gone")
	if ok, err := relay.RunTokenMay(relay.RunConversation, "run", "other", func() (string, string, error) { return "", "", boom }); ok || !errors.Is(err, boom) {
		t.Errorf("a failed read: %v, %v", ok, err)
	}
}
