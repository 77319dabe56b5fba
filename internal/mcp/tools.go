package mcp

import (
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
