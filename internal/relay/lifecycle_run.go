package relay

// A worker run's token (Principal.RunTaskID) is given to one run of one
// task. It acts as the run's agent, under the agent's rules (CanAct), but
// only within the run: on the run's task for the holder's actions, on the
// tasks of the run's conversation for reading and the sender's actions (a
// hand-off the run asked for). What acts for the whole agent (claiming,
// the update journal, the profile and presence) it may never do.

// RunScope is how far a worker run's token reaches with one call. A call
// that does nothing beyond the run (who am I, who is there), or that the
// relay ties to the run itself (a post's parent is the run's task), needs
// no scope; the zero RunScope allows nothing.
type RunScope int

// Run scopes.
const (
	// RunOwnTask: only on the run's task.
	RunOwnTask RunScope = iota + 1
	// RunConversation: on the run's task and the tasks of its conversation.
	RunConversation
	// RunNever: never with a run token.
	RunNever
)

// RunScope is how far a run token reaches for action a: the holder's
// actions on the run's task alone, reading and the sender's actions on the
// tasks of the run's conversation.
func (a Action) RunScope() RunScope {
	if a.RoleOf() == RoleHolder {
		return RunOwnTask
	}
	return RunConversation
}

// RunTokenMay reports whether the token of the run of task runTaskID may
// make a call of scope on task taskID ("" for a call on no task).
// conversations reads the conversation of the run's task and of taskID; it
// is called only when the answer depends on them.
func RunTokenMay(scope RunScope, runTaskID, taskID string, conversations func() (run, target string, err error)) (bool, error) {
	switch scope {
	case RunOwnTask:
		return taskID == runTaskID, nil
	case RunConversation:
		if taskID == runTaskID {
			return true, nil
		}
		if taskID == "" {
			return false, nil
		}
		run, target, err := conversations()
		if err != nil {
			return false, err
		}
		return run != "" && target == run, nil
	}
	return false, nil // RunNever, or no scope
}
