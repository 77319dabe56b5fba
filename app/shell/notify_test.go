package shell

import (
	"fmt"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func taskChange(id, from, to string, st relay.TaskStatus) relay.Change {
	return relay.Change{Type: relay.ChangeTask, Task: &relay.TaskSummary{ID: id, SenderSlug: from, RecipientSlug: to, Title: "T " + id, Status: st}}
}

// Ensure only transitions the operator cares about become notes.
func TestNoteDetector(t *testing.T) {
	tests := []struct {
		name    string
		changes []relay.Change
		want    []string // kinds
	}{
		{"operator's task completed", []relay.Change{taskChange("a", "operator", "bot", relay.StatusClaimed), taskChange("a", "operator", "bot", relay.StatusCompleted)}, []string{noteDone}},
		{"same status twice is told once", []relay.Change{taskChange("a", "operator", "bot", relay.StatusBlocked), taskChange("a", "operator", "bot", relay.StatusBlocked)}, []string{noteBlocked}},
		{"another agent's task", []relay.Change{taskChange("a", "bot", "other", relay.StatusCompleted)}, nil},
		{"a task sent to the operator", []relay.Change{taskChange("a", "bot", "operator", relay.StatusQueued)}, []string{noteReview}},
		{"a failed worker run, once", []relay.Change{
			{Type: "worker", Worker: &relay.WorkerStatus{WorkerConfig: relay.WorkerConfig{AgentSlug: "bot"}, LastRun: &relay.LastRun{TaskID: "x", Outcome: "blocked", FinishedAt: "1"}}},
			{Type: "worker", Worker: &relay.WorkerStatus{WorkerConfig: relay.WorkerConfig{AgentSlug: "bot"}, LastRun: &relay.LastRun{TaskID: "x", Outcome: "blocked", FinishedAt: "1"}}},
			{Type: "worker", Worker: &relay.WorkerStatus{WorkerConfig: relay.WorkerConfig{AgentSlug: "bot"}, LastRun: &relay.LastRun{TaskID: "y", Outcome: "completed", FinishedAt: "2"}}},
		}, []string{noteFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newNoteDetector("operator")
			var got []string
			for _, c := range tt.changes {
				for _, n := range d.detect(c) {
					got = append(got, n.kind)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("kinds %v, want %v", got, tt.want)
			}
		})
	}
}

// Ensure bursts are coalesced per kind and a lone note names its task.
func TestCoalesce(t *testing.T) {
	var five []note
	for i := range 5 {
		five = append(five, note{kind: noteDone, taskID: fmt.Sprint(i), title: fmt.Sprint("task ", i)})
	}
	tests := []struct {
		name  string
		notes []note
		want  []string // title|taskID
	}{
		{"one", five[:1], []string{"Task finished|0"}},
		{"five finished", five, []string{"5 tasks finished|"}},
		{"mixed", append(five[:2:2], note{kind: noteBlocked, taskID: "b"}), []string{"2 tasks finished|", "Task blocked|b"}},
		{"blocked and failed run of one task", []note{{kind: noteBlocked, taskID: "b"}, {kind: noteFailed, taskID: "b"}}, []string{"Task blocked|b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, n := range coalesce(tt.notes) {
				got = append(got, n.Title+"|"+n.TaskID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
		})
	}
}
