package relay

import (
	"errors"
	"fmt"
	"strings"
)

// The checks of a post, over what the store has loaded inside the post's
// write: the sender's open tasks, the recipient, the parent and the task
// the posting session handles, the hand-off limit. The store runs them in
// the order a post meets them; each is nil or the refusal the sender gets.

// CheckOpenTasks refuses a post with too_many_open_tasks when its sender
// already has open (the sender's open tasks, counted up to limit) of the
// limit one sender may have, so one sender cannot flood the queue and the
// database.
func CheckOpenTasks(open, limit int) error {
	if open < limit {
		return nil
	}
	return Errorf(ETooManyOpenTasks,
		"You already have %d open tasks, the most one sender may have. Wait for some to finish, or cancel ones that are no longer needed.", limit).
		WithDetails(map[string]any{"openTasks": open, "limit": limit})
}

// CheckRecipient refuses a post to a retired agent.
func CheckRecipient(recipient Agent) error {
	if recipient.RetiredAt != "" {
		return RetiredRecipient(recipient.Slug)
	}
	return nil
}

// CheckSelfSession refuses an agent's post from a live session
// (in.ReplySession) to that same session: its targetSession names the
// session the post came through, by id or by the name it told. name reads
// the posting session's name; it is called only when the ids differ.
func CheckSelfSession(in PostTaskInput, name func() (string, error)) error {
	if !in.FromAgent || in.ReplySession == "" || in.TargetSession == "" || in.SenderSlug != in.RecipientSlug {
		return nil
	}
	self := in.TargetSession == in.ReplySession
	if !self {
		n, err := name()
		if err != nil {
			return err
		}
		self = n != "" && n == in.TargetSession
	}
	if !self {
		return nil
	}
	return Errorf(ESelfTask,
		"This task names the session it is posted from (%s) as its target: a session cannot hand work to itself. Do the work here, or name another session.",
		in.TargetSession).WithDetails(map[string]any{"agent": in.SenderSlug, "session": in.ReplySession})
}

// CheckParent refuses to link a post by sender to parent, a task sender
// neither sent nor received.
func CheckParent(parent Task, sender string) error {
	if parent.SenderSlug != sender && parent.RecipientSlug != sender {
		return Errorf(ETaskAccessDenied, "A task can only be linked to a task you sent or received.")
	}
	return nil
}

// PostHops is how many hand-offs a post whose parent is parent makes, and
// in which conversation they are counted. held is the task the posting
// live session handles (nil for none): the post is one hop past the parent
// or past held, whichever is further from its start, so naming an older
// task as parentTaskId does not reset the count of the chat going on.
func PostHops(parent Task, held *Task) (hops int, conv string) {
	hops, conv = parent.Hops+1, parent.ConversationID
	if held != nil && held.ID != parent.ID && held.Hops+1 > hops {
		hops, conv = held.Hops+1, held.ConversationID
	}
	return hops, conv
}

// CheckChain refuses a hand-off that would take conversation conv to hops
// hand-offs from its first task when the hand-off limit is lower.
func CheckChain(hops, limit int, conv string) error {
	if hops <= limit {
		return nil
	}
	return Errorf(EChainLimit,
		"This task would be %d hand-offs away from the person who started the work (conversation %s), and the limit is %d. Do the work yourself, or answer BLOCKED: with what you need.",
		hops, conv, limit).WithDetails(map[string]any{"depth": hops, "limit": limit, "conversationId": conv})
}

// InferredParent explains a chain_limit refusal of a post made while the
// posting session handles the task held ("" for none): the post counts as
// a hand-off of that task whether the model named it, named another parent
// (explicit) or named none. Any other err is returned as it is.
func InferredParent(err error, held string, explicit bool) error {
	var e *Error
	if held == "" || !errors.As(err, &e) || e.Code != EChainLimit {
		return err
	}
	out := *e
	also := ""
	if explicit {
		also = ", whichever parentTaskId it names"
	}
	out.Message = fmt.Sprintf("This session is working on the task %s, so what it posts continues that task's conversation%s. %s", held, also, e.Message)
	details := map[string]any{"parentTaskId": held, "inferredFromSession": true}
	for k, v := range e.Details {
		details[k] = v
	}
	out.Details = details
	return &out
}

// CheckCapabilities refuses a post that requires capabilities (need) the
// recipient does not advertise (have).
func CheckCapabilities(recipient string, have, need []string) error {
	missing := MissingCapabilities(have, need)
	if len(missing) == 0 {
		return nil
	}
	return Errorf(ERecipientLacksCapability, "Cannot assign to %s: it does not advertise %s.",
		recipient, strings.Join(missing, ", ")).WithDetails(map[string]any{"missingCapabilities": missing})
}

// MissingCapabilities lists the capabilities of need that have lacks, in
// need's order.
func MissingCapabilities(have, need []string) []string {
	set := make(map[string]bool, len(have))
	for _, c := range have {
		set[c] = true
	}
	var missing []string
	for _, c := range need {
		if !set[c] {
			missing = append(missing, c)
		}
	}
	return missing
}
