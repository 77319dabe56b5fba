package mcp

import (
	"context"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A worker run's token (ccr_) is given to one run of one task; how far it
// reaches is the domain's rule (relay.RunScope, relay.RunTokenMay). Here
// each tool names its scope, and a call outside it answers forbidden,
// naming the rule in the tools' own words.

// runScopeRule is the rule, in words, that a forbidden answer names.
const runScopeRule = "A worker run's token acts only on its run's task: report_task, renew_task_lease and release_task on that task; " +
	"get_task, request_changes, requeue_task and cancel_task on tasks of its conversation; post_task to hand off part of it; whoami and list_agents. " +
	"claim_next_task, read_updates, register_agent and heartbeat act for the whole agent and are not allowed."

// checkRunScope refuses a call of tool on taskID (empty for tools without
// one) that the run token p may not make under scope (relay.RunTokenMay).
// Calls with other tokens pass.
func checkRunScope(ctx context.Context, svc relay.Service, p relay.Principal, tool string, scope relay.RunScope, taskID string) error {
	if p.RunTaskID == "" {
		return nil
	}
	ok, err := relay.RunTokenMay(scope, p.RunTaskID, taskID, func() (string, string, error) {
		run, err := svc.Task(ctx, p.RunTaskID)
		if err != nil {
			return "", "", fmt.Errorf("%s: read the run's task %s: %w", tool, p.RunTaskID, err)
		}
		target, err := svc.Task(ctx, taskID)
		if err != nil {
			return "", "", fmt.Errorf("%s: read task %s: %w", tool, taskID, err)
		}
		return run.ConversationID, target.ConversationID, nil
	})
	if err != nil || ok {
		return err
	}
	details := map[string]any{"rule": "run_token_scope", "tool": tool, "runTaskId": p.RunTaskID}
	if taskID != "" {
		details["taskId"] = taskID
	}
	return relay.Errorf(relay.EForbidden, "%s is not allowed with this token (the run of task %s). %s", tool, p.RunTaskID, runScopeRule).WithDetails(details)
}
