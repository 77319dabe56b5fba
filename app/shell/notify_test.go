package shell

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

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

// Ensure an agent's text reaches a notification as one line of plain text,
// bounded: control characters, escapes and direction overrides (which
// reorder what the operator reads) are replaced, and a long title is cut.
func TestNotificationTextFromAgents(t *testing.T) {
	long := strings.Repeat("x", 500)
	for _, tc := range []struct {
		name string
		in   []note
		bad  []string
	}{
		{"one", []note{{kind: noteReview, taskID: "t", title: "Approve\u202edcba\x1b]0;x\a\nnext", detail: "mallory\r"}}, []string{"\u202e", "\x1b", "\a", "\n", "\r"}},
		{"several", []note{{kind: noteDone, title: "a\u2066b"}, {kind: noteDone, title: "c\x9bd\u2028e"}}, []string{"\u2066", "\x9b", "\u2028"}},
		{"long", []note{{kind: noteBlocked, taskID: "t", title: long, detail: long}}, []string{long[:noteMax]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := coalesce(tc.in)
			if len(ns) != 1 {
				t.Fatalf("%d notifications", len(ns))
			}
			body := ns[0].Body
			if len(tc.in) > 1 {
				body = strings.ReplaceAll(body, "\n", " ") // the list's own lines
			}
			for _, b := range tc.bad {
				if strings.Contains(body, b) {
					t.Errorf("body %q holds %q", body, b)
				}
			}
			if n := utf8.RuneCountInString(body); n > 2*noteMax+3 {
				t.Errorf("body of %d characters", n)
			}
		})
	}
}
