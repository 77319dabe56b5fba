package mcp

import (
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A worker run's token (ccr_) is given to one run of one task. It acts as
// the run's agent only on that task, never as the whole agent: it may
// report on, renew and release the run's task, read it and the other tasks
// of its conversation, reopen or cancel a task of that conversation the
// agent sent (a hand-off it asked for), hand work off with post_task (the
// run's task is the parent), and see who it is and who else is there. It
// may not claim the agent's other tasks, read the agent's update journal,
// or change the agent's profile or presence. Every other use answers
// forbidden, naming this rule.

// runRule is what a tool lets a run token do.
type runRule int

const (
	// runAllowed: the tool does nothing beyond the run (whoami,
	// list_agents) or is tied to the run's task by the relay itself
	// (post_task, whose parent is the run's task).
	runAllowed runRule = iota
	// runOwnTask: only on the run's task.
	runOwnTask
	// runConversation: on the run's task and the tasks of its conversation.
	runConversation
	// runNever: never with a run token.
	runNever
)

// runScopeRule is the rule, in words, that a forbidden answer names.
const runScopeRule = "A worker run's token acts only on its run's task: report_task, renew_task_lease and release_task on that task; " +
	"get_task, request_changes, requeue_task and cancel_task on tasks of its conversation; post_task to hand off part of it; whoami and list_agents. " +
	"claim_next_task, read_updates, register_agent and heartbeat act for the whole agent and are not allowed."

// checkRunScope refuses a call of tool on taskID (empty for tools without
// one) that the run token p may not make. Calls with other tokens pass.
func checkRunScope(ctx context.Context, svc relay.Service, p relay.Principal, tool string, rule runRule, taskID string) error {
	if p.RunTaskID == "" || rule == runAllowed {
		return nil
	}
	switch rule {
	case runOwnTask:
		if taskID == p.RunTaskID {
			return nil
		}
	case runConversation:
		if taskID == p.RunTaskID {
			return nil
		}
		run, err := svc.Task(ctx, p.RunTaskID)
		if err != nil {
			return fmt.Errorf("%s: read the run's task %s: %w", tool, p.RunTaskID, err)
		}
		target, err := svc.Task(ctx, taskID)
		if err != nil {
			return fmt.Errorf("%s: read task %s: %w", tool, taskID, err)
		}
		if run.ConversationID != "" && target.ConversationID == run.ConversationID {
			return nil
		}
	}
	details := map[string]any{"rule": "run_token_scope", "tool": tool, "runTaskId": p.RunTaskID}
	if taskID != "" {
		details["taskId"] = taskID
	}
	return relay.Errorf(relay.EForbidden, "%s is not allowed with this token (the run of task %s). %s", tool, p.RunTaskID, runScopeRule).WithDetails(details)
}
