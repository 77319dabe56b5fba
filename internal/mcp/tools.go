package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// tools lists every tool the relay serves, in the protocol's order.
//
// Annotation choices (readOnly, destructive, idempotent; openWorld is always
// false because nothing leaves the relay). "Idempotent" means a second
// identical call leaves the relay as the first one did, even if it answers
// with an error (e.g. cancelling an already cancelled task is refused and
// changes nothing).
//
//	whoami            RO  –   idem  reads the caller's profile; no presence touch
//	register_agent    –   –   idem  upserts the caller's own profile with the values sent;
//	                                nothing is removed (an omitted details is kept)
//	list_agents       RO  –   idem  reads the directory; no presence touch
//	heartbeat         –   –   idem  refreshes lastSeenAt, nothing else
//	post_task         –   –   –     every call queues a new task
//	claim_next_task   –   –   –     every call can claim another task
//	renew_task_lease  –   –   idem  sets the lease to now+leaseSeconds; no report, no event
//	report_task       –   –   –     every call appends a report (progress can repeat)
//	release_task      –   –   idem  claimed → queued; a repeat is refused (not claimed)
//	read_updates      –   –   –     advances the caller's read cursor: updates are
//	                                delivered once, so a second call returns other ones
//	get_task          RO  –   idem  reads a task; it refreshes the requester's presence,
//	                                which is bookkeeping rather than a change it asked for
//	cancel_task       –   D   idem  cancelled is final: the recipient's work stops for good
//	requeue_task      –   –   idem  blocked → queued; a repeat is refused (not blocked)
//	request_changes   –   –   idem  completed → queued keeping the result in the timeline;
//	                                a repeat is refused (not completed)
func tools(svc relay.Service) []server.ServerTool {
	ctors := []func(relay.Service) (mcp.Tool, server.ToolHandlerFunc){
		whoami,
		registerAgent,
		listAgents,
		heartbeat,
		postTask,
		claimNextTask,
		renewTaskLease,
		reportTask,
		releaseTask,
		readUpdates,
		getTask,
		cancelTask,
		requeueTask,
		requestChanges,
	}
	out := make([]server.ServerTool, 0, len(ctors))
	for _, c := range ctors {
		t, h := c(svc)
		out = append(out, server.ServerTool{Tool: t, Handler: h})
	}
	return out
}

// adminNote is whoami's answer for the admin token.
const adminNote = "This is the admin token. It can act as any agent, so every tool that takes a slug (slug, agentSlug, senderSlug, recipientSlug, reporterSlug, requesterSlug) needs it passed explicitly."

type whoamiAgent struct {
	Kind  string      `json:"kind"`
	Agent relay.Agent `json:"agent"`
	// RunTaskID is set for a worker run token: the task being run.
	RunTaskID string `json:"runTaskId,omitempty"`
}

type whoamiAdmin struct {
	Kind string `json:"kind"`
	Note string `json:"note"`
}

func whoami(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("whoami", "Who am I",
		"Tell who the token you connect with belongs to. For an agent token it returns {kind: \"agent\", agent} with your slug, profile and availability; for the admin token {kind: \"admin\", note}. Call it once after connecting to confirm your identity. It does not count as activity.",
		annotate("Who am I", true, false, true),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		if err := a.err(); err != nil {
			return nil, err
		}
		if p.Kind == relay.PrincipalAdmin {
			return success(whoamiAdmin{Kind: string(relay.PrincipalAdmin), Note: adminNote})
		}
		ag, err := svc.GetAgent(ctx, p.Slug)
		if err != nil {
			return nil, fmt.Errorf("whoami %s: %w", p.Slug, err)
		}
		return success(whoamiAgent{Kind: string(relay.PrincipalAgent), Agent: agentOut(ag), RunTaskID: p.RunTaskID})
	})
}

func registerAgent(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("register_agent", "Register agent",
		"Register yourself on the relay, or update your profile: display name, model, capabilities and an optional one-line role. Call it once at the start of a session. Re-registering with the same values changes nothing; a name or role the relay owner set and locked is kept. Returns your agent profile.",
		annotate("Register agent", false, false, true),
		selfSlug("slug", "the agent to register"),
		mcp.WithString("displayName", mcp.Required(), mcp.Description("A short human-readable name shown to people and other agents."), mcp.MinLength(1), mcp.MaxLength(relay.MaxShortText)),
		mcp.WithString("modelSlug", mcp.Required(), mcp.Description("The model you run on, e.g. claude-sonnet-4 or gpt-5. Descriptive only; the slug is your address."), mcp.MinLength(1), mcp.MaxLength(relay.MaxShortText)),
		mcp.WithArray("capabilities", mcp.Required(),
			mcp.Description("What you can do, as labels. Tasks that require a capability you do not list cannot be assigned to you. Suggested: "+strings.Join(relay.DefaultCapabilities, ", ")+"."),
			mcp.WithStringItems(mcp.MinLength(1), mcp.MaxLength(relay.MaxCapability)),
			mcp.MinItems(1), mcp.MaxItems(relay.MaxCapabilities)),
		mcp.WithString("details", mcp.Description("Optional: one sentence on what you do (your role). Leave it out to keep the current one."), mcp.MaxLength(relay.MaxDetails)),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		in := relay.RegisterInput{
			DisplayName:  a.str("displayName"),
			ModelSlug:    a.str("modelSlug"),
			Capabilities: a.strings("capabilities", nil),
			Details:      a.optStr("details"),
		}
		supplied := a.str("slug")
		if err := a.err(); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug("slug", supplied)
		if err != nil {
			return nil, err
		}
		in.Slug = slug
		if in, err = in.Validate(); err != nil {
			return nil, err
		}
		ag, err := svc.RegisterAgent(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("register agent %s: %w", slug, err)
		}
		return success(agentOut(ag))
	})
}

func listAgents(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("list_agents", "List agents",
		"List the agents on the relay, ordered by slug, with their capabilities, role and availability, so you can pick a recipient for post_task. Only online agents unless includeOffline is true. The text result is the array; structuredContent wraps it as {agents}.",
		annotate("List agents", true, false, true),
		mcp.WithBoolean("includeOffline", mcp.Description("Also list agents that have not been seen recently."), mcp.DefaultBool(false)),
	)
	return t, handler(func(ctx context.Context, _ relay.Principal, a *args) (*mcp.CallToolResult, error) {
		includeOffline := a.boolean("includeOffline", false)
		if err := a.err(); err != nil {
			return nil, err
		}
		agents, err := svc.ListAgents(ctx, includeOffline)
		if err != nil {
			return nil, fmt.Errorf("list agents: %w", err)
		}
		out := make([]relay.Agent, 0, len(agents))
		for _, ag := range agents {
			out = append(out, agentOut(ag))
		}
		return successWrapped(out, "agents")
	})
}

func heartbeat(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("heartbeat", "Heartbeat",
		"Mark yourself as online without doing anything else. Most tools already do this; use it only during long stretches without other calls. Returns your agent profile.",
		annotate("Heartbeat", false, false, true),
		selfSlug("agentSlug", "the agent that is alive"),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		supplied := a.str("agentSlug")
		if err := a.err(); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug("agentSlug", supplied)
		if err != nil {
			return nil, err
		}
		ag, err := svc.Heartbeat(ctx, slug)
		if err != nil {
			return nil, fmt.Errorf("heartbeat %s: %w", slug, err)
		}
		return success(agentOut(ag))
	})
}

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
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		in := relay.PostTaskInput{
			RecipientSlug:        a.str("recipientSlug"),
			Title:                a.str("title"),
			Instructions:         a.str("instructions"),
			RequiredCapabilities: a.strings("requiredCapabilities", []string{}),
			Priority:             a.integer("priority", relay.PriorityNormal, relay.PriorityLow, relay.PriorityUrgent),
			ParentTaskID:         a.str("parentTaskId"),
		}
		supplied := a.str("senderSlug")
		if err := a.err(); err != nil {
			return nil, err
		}
		sender, err := p.ActingSlug("senderSlug", supplied)
		if err != nil {
			return nil, err
		}
		in.SenderSlug = sender
		if p.RunTaskID != "" {
			// A worker run hands off from the task it runs, and hand-offs
			// are bounded by the chain limit.
			in.ParentTaskID = p.RunTaskID
			in.EnforceChainLimit = true
		}
		if in, err = in.Validate(); err != nil {
			return nil, err
		}
		task, err := svc.PostTask(ctx, in)
		if err != nil {
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
		supplied := a.str("recipientSlug")
		waitMs := a.integer("waitMs", 0, 0, maxWaitMs)
		lease := a.integer("leaseSeconds", relay.DefaultLeaseSeconds, relay.MinLeaseSeconds, relay.MaxLeaseSeconds)
		if err := a.err(); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug("recipientSlug", supplied)
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
		// ctx is the request's: the wait ends when the client goes away.
		task, err := svc.ClaimNext(ctx, relay.ClaimInput{
			RecipientSlug: slug,
			Wait:          time.Duration(waitMs) * time.Millisecond,
			LeaseSeconds:  lease,
			Via:           relay.ViaChat,
		})
		if err != nil {
			return nil, fmt.Errorf("claim next task for %s: %w", slug, err)
		}
		if task == nil {
			return success(claimResult{Status: "idle"})
		}
		out := taskOut(*task)
		return success(claimResult{Status: "task", Task: &out})
	})
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
		var err error
		if in, err = in.Validate(); err != nil {
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

func taskTextHandler(slugField, textField, action string, call taskTextCall) server.ToolHandlerFunc {
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
	return t, taskTextHandler("reporterSlug", "reason", "release", svc.ReleaseTask)
}

func readUpdates(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("read_updates", "Read updates",
		"Read what changed on tasks you sent or received since your last read: claims, progress, completions, blockers, cancellations, requeues. Each update is delivered once; if more are waiting than limit, the rest come on the next call. Returns {updates, cursor} and mayHaveMissedUpdates when older updates were dropped. Do not acknowledge updates.",
		annotate("Read updates", false, false, false),
		selfSlug("agentSlug", "the reader"),
		mcp.WithInteger("limit", mcp.Description("How many updates to return at most (1..100)."), mcp.Min(1), mcp.Max(relay.MaxUpdatesLimit), mcp.DefaultNumber(relay.DefaultReadLimit)),
	)
	return t, handler(func(ctx context.Context, p relay.Principal, a *args) (*mcp.CallToolResult, error) {
		supplied := a.str("agentSlug")
		limit := a.integer("limit", relay.DefaultReadLimit, 1, relay.MaxUpdatesLimit)
		if err := a.err(); err != nil {
			return nil, err
		}
		slug, err := p.ActingSlug("agentSlug", supplied)
		if err != nil {
			return nil, err
		}
		u, err := svc.ReadUpdates(ctx, slug, limit)
		if err != nil {
			return nil, fmt.Errorf("read updates of %s: %w", slug, err)
		}
		if u.Updates == nil {
			u.Updates = []relay.Event{}
		}
		return success(u)
	})
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
	return t, taskTextHandler("senderSlug", "reason", "cancel", svc.CancelTask)
}

func requeueTask(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("requeue_task", "Requeue task",
		"Send a blocked task you sent back to its recipient's queue once you resolved the blocker; the note says what changed. Returns the task (status queued).",
		annotate("Requeue task", false, false, true),
		selfSlug("senderSlug", "the task's sender"),
		taskIDParam("The blocked task."),
		longTextParam("note", "How the blocker was resolved, or what to do now."),
	)
	return t, taskTextHandler("senderSlug", "note", "requeue", svc.RequeueTask)
}

func requestChanges(svc relay.Service) (mcp.Tool, server.ToolHandlerFunc) {
	t := newTool("request_changes", "Request changes",
		"Ask for fixes to a completed task you sent: it goes back to the recipient's queue with your note, keeping its id and history. Use this instead of posting a new task. Returns the task (status queued).",
		annotate("Request changes", false, false, true),
		selfSlug("senderSlug", "the task's sender"),
		taskIDParam("The completed task."),
		longTextParam("note", "What to change."),
	)
	return t, taskTextHandler("senderSlug", "note", "request changes on", svc.RequestChanges)
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

// agentOut gives an agent's capabilities as an empty array rather than null.
func agentOut(a relay.Agent) relay.Agent {
	if a.Capabilities == nil {
		a.Capabilities = []string{}
	}
	return a
}
