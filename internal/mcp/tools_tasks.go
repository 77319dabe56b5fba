package mcp

// The task tools: post_task, claim_next_task, renew_task_lease, report_task,
// release_task, get_task, cancel_task, requeue_task, request_changes.

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

func postTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("post_task", "Post task",
		"Hand a concrete task to another agent. It is queued for the recipient, who claims it with claim_next_task; you learn of its progress through read_updates. Put everything the recipient needs in the instructions. Returns the new task (status queued); keep its id. Do not post thanks or acknowledgements as tasks.",
		annotate("Post task", false, false, false),
		selfSlug("senderSlug", "the sender"),
		mcp.WithString("recipientSlug", mcp.Required(), mcp.Description("The slug of the agent that should do the task (see list_agents). "+slugRule)),
		mcp.WithString("title", mcp.Required(), mcp.Description("A short title for the task."), mcp.MinLength(1), mcp.MaxLength(relay.MaxShortText)),
		longTextParam("instructions", "What to do, with all the context the recipient needs, and what to report back."),
		mcp.WithArray("requiredCapabilities",
			mcp.Description("Capabilities the recipient must advertise; the task is refused with recipient_lacks_capability otherwise."),
			mcp.WithStringItems(mcp.MinLength(1), mcp.MaxLength(relay.MaxCapability)),
			mcp.MaxItems(relay.MaxCapabilities), mcp.DefaultArray([]string{})),
		mcp.WithInteger("priority", mcp.Description("1 low, 2 normal, 3 urgent. Urgent tasks are claimed first."), intEnum(relay.PriorityLow, relay.PriorityNormal, relay.PriorityUrgent), mcp.DefaultNumber(relay.PriorityNormal)),
		mcp.WithString("parentTaskId", mcp.Description("Optional: the task this one is handed off from (one you sent or received), to keep the work in one thread. During a worker run the run's task is used automatically."), format("uuid")),
		mcp.WithString("targetSession", mcp.Description("Optional: the recipient's session this task is for, by session id or exact session name on the recipient's computer. Required to post a task to yourself (to one of your own sessions); otherwise that is refused."), mcp.MinLength(1), mcp.MaxLength(relay.MaxTargetSession)),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		in := relay.PostTaskInput{
			RecipientSlug:        a.str("recipientSlug"),
			Title:                a.str("title"),
			Instructions:         a.str("instructions"),
			RequiredCapabilities: a.strings("requiredCapabilities", []string{}, relay.MaxCapabilities),
			Priority:             a.integer("priority", relay.PriorityNormal, relay.PriorityLow, relay.PriorityUrgent),
			ParentTaskID:         a.str("parentTaskId"),
			TargetSession:        a.str("targetSession"),
			ReplySession:         liveSession(ctx),
		}
		sender, err := a.actingAs(p, "senderSlug")
		if err != nil {
			return nil, err
		}
		in.SenderSlug = sender
		if p.RunTaskID != "" {
			// A worker run hands off from the task it runs: its conversation.
			in.ParentTaskID = p.RunTaskID
		}
		// An agent's own post (live session or run) may not go to itself
		// without a target session, and its hand-offs are bounded by the limit.
		in.FromAgent = p.Kind == relay.PrincipalAgent
		task, err := svc.PostTask(ctx, in) // the service validates in
		if err != nil {
			if relay.ErrorCode(err) == relay.EUnknownAgent {
				if agents, lerr := svc.ListAgents(ctx, true); lerr == nil {
					err = relay.SimilarAgents(err, in.RecipientSlug, agents)
				}
			}
			return nil, fmt.Errorf("post task from %s to %s: %w", in.SenderSlug, in.RecipientSlug, err)
		}
		return success(taskOut(task))
	})
}

// claimResult is claim_next_task's answer.
type claimResult struct {
	Status string      `json:"status"`
	Task   *relay.Task `json:"task,omitempty"`
	// Note explains an idle answer that is not for lack of tasks.
	Note string `json:"note,omitempty"`
}

// workerOnlyNote is claim_next_task's note for an agent whose tasks go only
// to its worker.
const workerOnlyNote = "This agent's tasks run in its worker on the relay's computer, so chat sessions don't receive them. " +
	"There is nothing to claim here; the operator can turn off \"only this worker\" in the dashboard to take tasks in chat again."

// unreadClaimReason is the release reason of a task handed to a waiting
// claim whose caller had gone.
const unreadClaimReason = "the waiting claim ended before the task reached it (its caller left or cancelled, or the relay stopped)"

// maxWaitMs is the longest claim_next_task long-poll.
const maxWaitMs = int(relay.MaxWait / time.Millisecond)

func claimNextTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("claim_next_task", "Claim next task",
		"Take your next task: the most urgent, then oldest, queued task addressed to you. It becomes yours under a lease; renew the lease while you work and finish with report_task (completed or blocked) or release_task. With waitMs it waits up to that long for a task to arrive. Returns {status: \"task\", task} or {status: \"idle\"}. When idle, say nothing about it.",
		annotate("Claim next task", false, false, false),
		selfSlug("recipientSlug", "the recipient claiming"),
		mcp.WithInteger("waitMs", mcp.Description("How long to wait for a task when none is queued, in milliseconds (0 answers at once, at most 25000)."), mcp.Min(0), mcp.Max(maxWaitMs), mcp.DefaultNumber(0)),
		leaseParam("How long the task stays yours without renew_task_lease, in seconds (60..86400)."),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		if err := checkRunScope(ctx, svc, p, "claim_next_task", relay.RunNever, ""); err != nil {
			return nil, err
		}
		supplied := a.str("recipientSlug")
		waitMs := a.integer("waitMs", 0, 0, maxWaitMs)
		lease := a.integer("leaseSeconds", relay.DefaultLeaseSeconds, relay.MinLeaseSeconds, relay.MaxLeaseSeconds)
		slug, err := a.acting(p, "recipientSlug", supplied)
		if err != nil {
			return nil, err
		}
		// A malformed session header is refused whatever the agent's
		// workers are.
		session, err := relay.LiveSessionID("session", liveSession(ctx))
		if err != nil {
			return nil, err
		}
		// An agent whose enabled worker is exclusive gets nothing in chat,
		// even through the admin token: it is only marked present.
		only, err := svc.WorkerOnly(ctx, slug)
		if err != nil {
			return nil, fmt.Errorf("claim next task for %s: %w", slug, err)
		}
		if only {
			if _, err := svc.Heartbeat(ctx, slug); err != nil {
				return nil, fmt.Errorf("claim next task for %s: heartbeat: %w", slug, err)
			}
			return success(claimResult{Status: "idle", Note: workerOnlyNote})
		}
		in := relay.ClaimInput{
			RecipientSlug: slug,
			Wait:          time.Duration(waitMs) * time.Millisecond,
			LeaseSeconds:  lease,
			Via:           relay.ViaChat,
			Session:       session,
			// A task aimed at a live session is that session's: a claim
			// through another session leaves it (the store's rule for
			// Session), and so does a claim through none.
			LeaveLiveSessions: true,
		}
		// ctx is the request's: the wait ends when the client goes away.
		task, err := svc.ClaimNext(ctx, in)
		return claimAnswer(ctx, svc, slug, task, err)
	})
}

// claimAnswer is claim_next_task's answer for what ClaimNext returned.
func claimAnswer(ctx context.Context, svc relay.Service, slug string, task *relay.Task, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return nil, fmt.Errorf("claim next task for %s: %w", slug, err)
	}
	if task == nil {
		return success(claimResult{Status: "idle"})
	}
	giveBack := func(ctx context.Context) error {
		if _, err := svc.ReleaseTask(context.WithoutCancel(ctx), slug, task.ID, unreadClaimReason); err != nil {
			return fmt.Errorf("claim next task for %s: give back a task its caller left: %w", slug, err)
		}
		return nil
	}
	if relay.CallerGone(ctx) {
		// The caller left (or cancelled, or the relay is stopping, or
		// closed its connection behind a pipelined byte) while a post
		// handed it this task: nobody reads the answer, so the task goes
		// back to the queue now instead of staying claimed until its
		// lease runs out.
		if err := giveBack(ctx); err != nil {
			return nil, err
		}
		return success(claimResult{Status: "idle"})
	}
	// And so it does if the answer's write fails (delivery.go).
	onUndelivered(ctx, giveBack)
	out := taskOut(*task)
	return success(claimResult{Status: "task", Task: &out})
}

func renewTaskLease(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("renew_task_lease", "Renew task lease",
		"Keep a task you claimed: the lease is set to leaseSeconds from now. Call it before the lease runs out during long work, or the task goes back to the queue. Silent: the sender is not notified. Returns the task.",
		annotate("Renew task lease", false, false, true),
		selfSlug("reporterSlug", "the task's recipient"),
		taskIDParam("The claimed task."),
		leaseParam("New lease length from now, in seconds (60..86400)."),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		supplied := a.str("reporterSlug")
		rawID := a.str("taskId")
		lease := a.integer("leaseSeconds", relay.DefaultLeaseSeconds, relay.MinLeaseSeconds, relay.MaxLeaseSeconds)
		if err := a.err(); err != nil {
			return nil, err
		}
		id, err := relay.TaskID("taskId", rawID)
		if err != nil {
			return nil, err
		}
		if err := checkRunScope(ctx, svc, p, "renew_task_lease", relay.ActionRenew.RunScope(), id); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug("reporterSlug", supplied)
		if err != nil {
			return nil, err
		}
		task, err := svc.RenewLease(ctx, slug, id, lease)
		if err != nil {
			return nil, fmt.Errorf("renew lease of %s by %s: %w", id, slug, err)
		}
		return success(taskOut(task))
	})
}

func reportTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("report_task", "Report on task",
		"Report on a task you hold: progress that changes a decision, completion (put the deliverable in result) or a blocker you cannot resolve yourself. completed and blocked end your claim; the sender sees the report in read_updates. Never report just to acknowledge or thank. Returns the task.",
		annotate("Report on task", false, false, false),
		selfSlug("reporterSlug", "the task's recipient"),
		taskIDParam("The claimed task."),
		mcp.WithString("kind", mcp.Required(), mcp.Description("progress keeps the task claimed; completed finishes it; blocked stops it until the sender requeues or cancels it."), mcp.Enum(relay.ReportProgress, relay.ReportCompleted, relay.ReportBlocked)),
		longTextParam("message", "What happened, what is blocking, or a summary of the result."),
		mcp.WithString("result", mcp.Description("Optional: the deliverable itself (answer, patch, links), usually with kind completed."), mcp.MaxLength(relay.MaxResult)),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		supplied := a.str("reporterSlug")
		in := relay.ReportInput{
			TaskID:  a.str("taskId"),
			Kind:    a.oneOf("kind", relay.ReportProgress, relay.ReportCompleted, relay.ReportBlocked),
			Message: a.str("message"),
			Result:  a.str("result"),
		}
		if err := a.err(); err != nil {
			return nil, err
		}
		// The service validates in; the run's scope needs the task's id.
		id, err := relay.TaskID("taskId", in.TaskID)
		if err != nil {
			return nil, err
		}
		if err := checkRunScope(ctx, svc, p, "report_task", relay.ActionReport.RunScope(), id); err != nil {
			return nil, err
		}
		if in.ReporterSlug, err = p.ActingSlug("reporterSlug", supplied); err != nil {
			return nil, err
		}
		task, err := svc.ReportTask(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("report %s on %s by %s: %w", in.Kind, in.TaskID, in.ReporterSlug, err)
		}
		return success(taskOut(task))
	})
}

// taskTextCall is the shape shared by release, cancel, requeue and
// request_changes: an acting slug, a task id and a required text.
type taskTextCall func(ctx context.Context, slug, taskID, text string) (relay.Task, error)

func taskTextHandler(svc relay.Service, tool string, scope relay.RunScope, slugField, textField, action string, call taskTextCall) server.ToolHandlerFunc {
	return handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		supplied := a.str(slugField)
		rawID := a.str("taskId")
		rawText := a.str(textField)
		if err := a.err(); err != nil {
			return nil, err
		}
		id, err := relay.TaskID("taskId", rawID)
		if err != nil {
			return nil, err
		}
		text, err := relay.Text(textField, rawText, 1, relay.MaxLongText)
		if err != nil {
			return nil, err
		}
		if err := checkRunScope(ctx, svc, p, tool, scope, id); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug(slugField, supplied)
		if err != nil {
			return nil, err
		}
		task, err := call(ctx, slug, id, text)
		if err != nil {
			return nil, fmt.Errorf("%s %s by %s: %w", action, id, slug, err)
		}
		return success(taskOut(task))
	})
}

func releaseTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("release_task", "Release task",
		"Give a task you hold back to your queue because you cannot finish it now; the sender is told why. Use report_task with kind blocked instead when the sender must act. Returns the task (status queued).",
		annotate("Release task", false, false, true),
		selfSlug("reporterSlug", "the task's recipient"),
		taskIDParam("The claimed task."),
		longTextParam("reason", "Why you are giving it back."),
	)
	return t, taskTextHandler(svc, "release_task", relay.ActionRelease.RunScope(), "reporterSlug", "reason", "release", svc.ReleaseTask)
}

func getTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("get_task", "Get task",
		"Read one task you sent or received, with its instructions and full timeline of reports. Returns the task.",
		annotate("Get task", true, false, true),
		selfSlug("requesterSlug", "the task's sender or recipient"),
		taskIDParam("The task to read."),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		supplied := a.str("requesterSlug")
		rawID := a.str("taskId")
		if err := a.err(); err != nil {
			return nil, err
		}
		id, err := relay.TaskID("taskId", rawID)
		if err != nil {
			return nil, err
		}
		if err := checkRunScope(ctx, svc, p, "get_task", relay.ActionRead.RunScope(), id); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug("requesterSlug", supplied)
		if err != nil {
			return nil, err
		}
		task, err := svc.GetTask(ctx, slug, id)
		if err != nil {
			return nil, fmt.Errorf("get task %s for %s: %w", id, slug, err)
		}
		return success(taskOut(task))
	})
}

func cancelTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("cancel_task", "Cancel task",
		"Cancel a task you sent that is not finished (queued, claimed or blocked). The recipient is told why and stops; a cancelled task cannot be reopened. Returns the task.",
		annotate("Cancel task", false, true, true),
		selfSlug("senderSlug", "the task's sender"),
		taskIDParam("The task to cancel."),
		longTextParam("reason", "Why it is cancelled; the recipient sees it."),
	)
	return t, taskTextHandler(svc, "cancel_task", relay.ActionCancel.RunScope(), "senderSlug", "reason", "cancel", svc.CancelTask)
}

func requeueTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("requeue_task", "Requeue task",
		"Send a blocked task you sent back to its recipient's queue once you resolved the blocker; the note says what changed. Returns the task (status queued).",
		annotate("Requeue task", false, false, true),
		selfSlug("senderSlug", "the task's sender"),
		taskIDParam("The blocked task."),
		longTextParam("note", "How the blocker was resolved, or what to do now."),
	)
	return t, taskTextHandler(svc, "requeue_task", relay.ActionRequeue.RunScope(), "senderSlug", "note", "requeue", svc.RequeueTask)
}

func requestChanges(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("request_changes", "Request changes",
		"Ask for fixes to a completed task you sent: it goes back to the recipient's queue with your note, keeping its id and history. Use this instead of posting a new task. Returns the task (status queued).",
		annotate("Request changes", false, false, true),
		selfSlug("senderSlug", "the task's sender"),
		taskIDParam("The completed task."),
		longTextParam("note", "What to change."),
	)
	return t, taskTextHandler(svc, "request_changes", relay.ActionRequestChanges.RunScope(), "senderSlug", "note", "request changes on", svc.RequestChanges)
}

// taskOut gives a task's lists as empty arrays rather than null.
func taskOut(t relay.Task) relay.Task {
	if t.RequiredCapabilities == nil {
		t.RequiredCapabilities = []string{}
	}
	if t.Reports == nil {
		t.Reports = []relay.Report{}
	}
	return t
}
