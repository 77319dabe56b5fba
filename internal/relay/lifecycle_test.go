package relay_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// taskIn is a task from ann to bob in status s.
func taskIn(s relay.TaskStatus) relay.Task {
	return relay.Task{ID: "t1", SenderSlug: "ann", RecipientSlug: "bob", Status: s}
}

// TestCanActStates is the lifecycle's state table: for each action, the
// states in which the one who may take it (the sender, or the recipient
// as holder) can. Every other state is refused with the action's own
// refusal, whose details name the state.
func TestCanActStates(t *testing.T) {
	all := relay.Statuses
	table := []struct {
		action  relay.Action
		actor   string
		allowed []relay.TaskStatus
		refusal string // code outside allowed
		detail  string // the details key naming the state
	}{
		{relay.ActionRead, "ann", all, "", ""},
		{relay.ActionRead, "bob", all, "", ""},
		{relay.ActionRenew, "bob", []relay.TaskStatus{relay.StatusClaimed}, relay.ETaskUpdateDenied, "taskStatus"},
		{relay.ActionReport, "bob", []relay.TaskStatus{relay.StatusClaimed}, relay.ETaskUpdateDenied, "taskStatus"},
		{relay.ActionRelease, "bob", []relay.TaskStatus{relay.StatusClaimed}, relay.ETaskUpdateDenied, "taskStatus"},
		{relay.ActionCancel, "ann", []relay.TaskStatus{relay.StatusQueued, relay.StatusClaimed, relay.StatusBlocked}, relay.EInvalidTaskState, "status"},
		{relay.ActionRequeue, "ann", []relay.TaskStatus{relay.StatusBlocked}, relay.EInvalidTaskState, "status"},
		{relay.ActionRequestChanges, "ann", []relay.TaskStatus{relay.StatusCompleted}, relay.EInvalidTaskState, "status"},
	}
	for _, row := range table {
		for _, s := range all {
			t.Run(string(row.action)+"/"+row.actor+"/"+string(s), func(t *testing.T) {
				err := relay.CanAct(row.action, row.actor, taskIn(s))
				want := row.refusal
				for _, a := range row.allowed {
					if a == s {
						want = ""
					}
				}
				if got := relay.ErrorCode(err); got != want {
					t.Fatalf("CanAct(%s, %s, %s) = %v, want code %q", row.action, row.actor, s, err, want)
				}
				if want == "" {
					return
				}
				if got := relay.AsError(err).Details[row.detail]; got != string(s) {
					t.Errorf("details[%s] = %v, want %q", row.detail, got, s)
				}
			})
		}
	}
}

// TestCanActWho: each action is refused to whoever is not its party, in
// any state, with the refusal (code and message) agents already know.
func TestCanActWho(t *testing.T) {
	tests := []struct {
		name   string
		action relay.Action
		actor  string
		status relay.TaskStatus
		code   string
		msg    string
	}{
		{"a stranger reads", relay.ActionRead, "cy", relay.StatusQueued, relay.ETaskAccessDenied,
			"Only the task sender or recipient can read this task."},
		{"the sender reports", relay.ActionReport, "ann", relay.StatusClaimed, relay.ETaskUpdateDenied,
			"Only the recipient that currently holds a claimed task may update it."},
		{"a stranger renews", relay.ActionRenew, "cy", relay.StatusClaimed, relay.ETaskUpdateDenied,
			"Only the recipient that currently holds a claimed task may update it."},
		{"the recipient releases a queued task", relay.ActionRelease, "bob", relay.StatusQueued, relay.ETaskUpdateDenied,
			"Only the recipient that currently holds a claimed task may update it."},
		{"the recipient cancels", relay.ActionCancel, "bob", relay.StatusQueued, relay.ETaskCancelDenied,
			"Only the task sender can cancel this task."},
		{"a stranger cancels a done task", relay.ActionCancel, "cy", relay.StatusCompleted, relay.ETaskCancelDenied,
			"Only the task sender can cancel this task."},
		{"the recipient requeues", relay.ActionRequeue, "bob", relay.StatusBlocked, relay.ETaskRequeueDenied,
			"Only the task sender can requeue this task."},
		{"the recipient asks for changes", relay.ActionRequestChanges, "bob", relay.StatusCompleted, relay.ETaskChangesDenied,
			"Only the task sender can ask for changes."},
		{"the sender cancels a completed task", relay.ActionCancel, "ann", relay.StatusCompleted, relay.EInvalidTaskState,
			"A completed task cannot be cancelled."},
		{"the sender requeues a queued task", relay.ActionRequeue, "ann", relay.StatusQueued, relay.EInvalidTaskState,
			"Only a blocked task can be requeued; this one is queued."},
		{"the sender asks changes of a blocked task", relay.ActionRequestChanges, "ann", relay.StatusBlocked, relay.EInvalidTaskState,
			"Changes can be asked for on a completed task; this one is blocked."},
		{"an unknown action", relay.Action("delete"), "ann", relay.StatusQueued, relay.EInvalidRequest,
			`Unknown action on a task: "delete".`},
		{"the holder completes", relay.ActionReport, "bob", relay.StatusClaimed, "", ""},
		{"the sender cancels a claimed task", relay.ActionCancel, "ann", relay.StatusClaimed, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := relay.CanAct(tt.action, tt.actor, taskIn(tt.status))
			if got := relay.ErrorCode(err); got != tt.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.code)
			}
			if err != nil && relay.ErrorMessage(err) != tt.msg {
				t.Errorf("message = %q, want %q", relay.ErrorMessage(err), tt.msg)
			}
		})
	}
}

// TestCanActSelfTask: an agent that sent a task to itself is both parties.
func TestCanActSelfTask(t *testing.T) {
	task := relay.Task{SenderSlug: "ann", RecipientSlug: "ann", Status: relay.StatusClaimed}
	for _, a := range []relay.Action{relay.ActionRead, relay.ActionReport, relay.ActionCancel} {
		if err := relay.CanAct(a, "ann", task); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// TestRemoteCommand: a remote sender may cancel an open task and send a
// blocked or completed one back to work; any other event, or a state that
// no longer allows it, changes nothing.
func TestRemoteCommand(t *testing.T) {
	tests := []struct {
		event  string
		status relay.TaskStatus
		want   relay.Action
	}{
		{relay.EventTaskCancelled, relay.StatusQueued, relay.ActionCancel},
		{relay.EventTaskCancelled, relay.StatusClaimed, relay.ActionCancel},
		{relay.EventTaskCancelled, relay.StatusBlocked, relay.ActionCancel},
		{relay.EventTaskCancelled, relay.StatusCompleted, ""},
		{relay.EventTaskCancelled, relay.StatusCancelled, ""},
		{relay.EventTaskRequeued, relay.StatusBlocked, relay.ActionRequeue},
		{relay.EventTaskRequeued, relay.StatusCompleted, relay.ActionRequeue},
		{relay.EventTaskRequeued, relay.StatusQueued, ""},
		{relay.EventTaskRequeued, relay.StatusClaimed, ""},
		{relay.EventTaskRequeued, relay.StatusCancelled, ""},
		{relay.EventTaskCompleted, relay.StatusClaimed, ""},
	}
	for _, tt := range tests {
		if got := relay.RemoteCommand(tt.event, tt.status); got != tt.want {
			t.Errorf("RemoteCommand(%s, %s) = %q, want %q", tt.event, tt.status, got, tt.want)
		}
	}
}

// TestReopenHops: a task a worker run sends back to work goes one hop past
// the run's task when it is in the run's conversation and not already
// further; otherwise it keeps its hops.
func TestReopenHops(t *testing.T) {
	tests := []struct {
		name      string
		run, task relay.Task
		hops      int
		raise     bool
	}{
		{"same conversation, behind the run", relay.Task{ConversationID: "c", Hops: 2}, relay.Task{ConversationID: "c", Hops: 1}, 3, true},
		{"same conversation, level with the run", relay.Task{ConversationID: "c", Hops: 2}, relay.Task{ConversationID: "c", Hops: 2}, 3, true},
		{"same conversation, already one past", relay.Task{ConversationID: "c", Hops: 2}, relay.Task{ConversationID: "c", Hops: 3}, 3, false},
		{"same conversation, further on", relay.Task{ConversationID: "c", Hops: 0}, relay.Task{ConversationID: "c", Hops: 4}, 4, false},
		{"another conversation", relay.Task{ConversationID: "c", Hops: 2}, relay.Task{ConversationID: "d", Hops: 0}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hops, raise := relay.ReopenHops(tt.run, tt.task)
			if hops != tt.hops || raise != tt.raise {
				t.Errorf("ReopenHops = %d, %v; want %d, %v", hops, raise, tt.hops, tt.raise)
			}
		})
	}
}
