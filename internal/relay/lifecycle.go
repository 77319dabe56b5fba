package relay

// The task lifecycle: which action on a posted task is allowed in which
// state, and by whom. These are the rules alone, over a task already
// loaded; the store applies them inside the write that changes the task,
// so a check and its change are one transaction.
//
// Who may act:
//   - the sender (SenderSlug): read, cancel an open task, requeue a blocked
//     one, ask for changes to a completed one;
//   - the holder (the recipient while the task is claimed): renew the
//     lease, report progress, complete, block, release;
//   - the recipient at any time: read;
//   - the operator acts as the task's sender (the dashboard and the CLI
//     pass the task's SenderSlug, marked ByOperator), under the sender's
//     rules;
//   - a worker run's token acts as its agent under the same rules, within
//     the run's scope (RunScopeAllows);
//   - a remote relay, for a task its agent sent here, may cancel or send it
//     back to work (RemoteCommand).

// Action is something an agent asks to do to a task that is already posted.
type Action string

// Actions on a posted task.
const (
	// ActionRead reads the task (get_task).
	ActionRead Action = "read"
	// ActionRenew extends the holder's lease (renew_task_lease).
	ActionRenew Action = "renew"
	// ActionReport adds progress, completes or blocks the task (report_task).
	ActionReport Action = "report"
	// ActionRelease gives a claimed task back to the queue (release_task).
	ActionRelease Action = "release"
	// ActionCancel cancels an open task (cancel_task).
	ActionCancel Action = "cancel"
	// ActionRequeue sends a blocked task back to work (requeue_task).
	ActionRequeue Action = "requeue"
	// ActionRequestChanges reopens a completed task (request_changes).
	ActionRequestChanges Action = "request_changes"
)

// Role is the part an agent plays for one action: whose word the action
// needs.
type Role int

// Roles.
const (
	// RoleParty is the sender or the recipient.
	RoleParty Role = iota
	// RoleHolder is the recipient while the task is claimed.
	RoleHolder
	// RoleSender is the task's sender (or the operator acting as it).
	RoleSender
)

// RoleOf is the role action needs. An unknown action needs the sender.
func (a Action) RoleOf() Role {
	switch a {
	case ActionRead:
		return RoleParty
	case ActionRenew, ActionReport, ActionRelease:
		return RoleHolder
	default:
		return RoleSender
	}
}

// CanAct is nil when the agent actor (a normalized slug) may take action
// on task in its current state, and otherwise the refusal the agent gets:
// task_access_denied, task_update_denied, task_cancel_denied,
// task_requeue_denied, task_changes_denied or invalid_task_state (whose
// details name the task's status).
func CanAct(a Action, actor string, task Task) error {
	switch a.RoleOf() {
	case RoleParty:
		if task.SenderSlug != actor && task.RecipientSlug != actor {
			return Errorf(ETaskAccessDenied, "Only the task sender or recipient can read this task.")
		}
		return nil
	case RoleHolder:
		if task.RecipientSlug != actor || task.Status != StatusClaimed {
			return Errorf(ETaskUpdateDenied, "Only the recipient that currently holds a claimed task may update it.").
				WithDetails(map[string]any{"taskStatus": string(task.Status)})
		}
		return nil
	}
	if task.SenderSlug != actor {
		return senderOnly(a)
	}
	if e := senderMay(a, task.Status); e != nil {
		return e.WithDetails(map[string]any{"status": string(task.Status)})
	}
	return nil
}

// senderOnly is the refusal of a sender's action a to anyone else.
func senderOnly(a Action) *Error {
	switch a {
	case ActionCancel:
		return Errorf(ETaskCancelDenied, "Only the task sender can cancel this task.")
	case ActionRequeue:
		return Errorf(ETaskRequeueDenied, "Only the task sender can requeue this task.")
	case ActionRequestChanges:
		return Errorf(ETaskChangesDenied, "Only the task sender can ask for changes.")
	}
	return Errorf(EInvalidRequest, "Unknown action on a task: %q.", string(a))
}

// senderMay is nil when the sender may take action a on a task in status
// s, and otherwise invalid_task_state.
func senderMay(a Action, s TaskStatus) *Error {
	switch a {
	case ActionCancel:
		if s.Open() {
			return nil
		}
		return Errorf(EInvalidTaskState, "A %s task cannot be cancelled.", s)
	case ActionRequeue:
		if s == StatusBlocked {
			return nil
		}
		return Errorf(EInvalidTaskState, "Only a blocked task can be requeued; this one is %s.", s)
	case ActionRequestChanges:
		if s == StatusCompleted {
			return nil
		}
		return Errorf(EInvalidTaskState, "Changes can be asked for on a completed task; this one is %s.", s)
	}
	return Errorf(EInvalidRequest, "Unknown action on a task: %q.", string(a))
}

// RemoteCommand is the action a remote sender's event of type eventType
// (relayed for a task its agent sent here) takes on the task, now in
// status s: cancel an open task, or send a blocked or completed one back
// to work (a requeue or a request for changes; the remote relay checked
// which). "" when the task's state no longer allows it: the remote relay
// is then sent the task's true state instead.
func RemoteCommand(eventType string, s TaskStatus) Action {
	switch {
	case eventType == EventTaskCancelled && s.Open():
		return ActionCancel
	case eventType == EventTaskRequeued && (s == StatusBlocked || s == StatusCompleted):
		return ActionRequeue
	}
	return ""
}

// ReopenHops is the hop count a task gets when a worker run sends it back
// to work (request_changes or requeue_task with a run token), with run the
// run's task: a task of the run's conversation goes to at least one hop
// past the run's task, so two runs cannot reopen and re-post to each other
// forever, each new task one hop from a task that never gets further.
// raise is false when the task keeps its hops; otherwise the new count
// must pass the hand-off limit (CheckChain) in the run's conversation.
func ReopenHops(run, task Task) (hops int, raise bool) {
	if run.ConversationID != task.ConversationID || run.Hops+1 <= task.Hops {
		return task.Hops, false
	}
	return run.Hops + 1, true
}
