package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// backfillConversations gives tasks written without a conversation (before
// migration 0007, or copied from the upstream relay) the conversation of
// the first task of their parent chain, and hops equal to their depth. A
// task without a parent keeps conversation_id NULL: it started its own.
const backfillConversations = `
UPDATE tasks SET hops = depth WHERE conversation_id IS NULL AND hops < depth;
WITH RECURSIVE chain(id, root) AS (
    SELECT id, id FROM tasks WHERE parent_task_id IS NULL
    UNION
    SELECT c.id, chain.root FROM tasks c JOIN chain ON c.parent_task_id = chain.id
)
UPDATE tasks SET conversation_id = chain.root FROM chain
WHERE chain.id = tasks.id AND chain.root <> tasks.id AND tasks.conversation_id IS NULL;`

// backfill runs backfillConversations in tx.
func backfill(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, backfillConversations); err != nil {
		return fmt.Errorf("backfill conversations: %w", err)
	}
	return nil
}

// sessionTask is the task agent's live session is handling: the one it
// claimed most recently and still holds (status claimed), "" when none.
// A post from that session that names no parent continues that task's
// conversation, so the hand-off limit holds for live chats whether or not
// the model passes parentTaskId.
func sessionTask(t *tx, agent, session string) (string, error) {
	var id string
	err := t.tx.QueryRowContext(t.ctx, `SELECT id FROM tasks INDEXED BY tasks_claim_session
		WHERE recipient_slug = ? AND claim_session = ? AND status = 'claimed' AND claim_session IS NOT NULL
		ORDER BY claimed_at DESC LIMIT 1`, agent, session).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the task session %s is handling: %w", session, err)
	}
	return id, nil
}

// inferredParent explains a chain_limit refusal of a post made while the
// posting session handles the task held (sessionTask): the post counts as
// a hand-off of that task whether the model named it, named another parent
// (explicit) or named none.
func inferredParent(err error, held string, explicit bool) error {
	var e *relay.Error
	if held == "" || !errors.As(err, &e) || e.Code != relay.EChainLimit {
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

// heldHops is how many hand-offs a post whose parent is parent makes, and
// in which conversation the count is taken, when the posting session
// handles the task held ("" for none): one more than the parent or than
// held, whichever is further from its start, so naming an older task as
// parentTaskId does not reset the count of the chat that is going on.
func heldHops(t *tx, held string, parent relay.Task) (int, string, error) {
	hops, conv := parent.Hops+1, parent.ConversationID
	if held == "" || held == parent.ID {
		return hops, conv, nil
	}
	h, err := getTask(t.ctx, t.tx, held)
	if err != nil {
		return 0, "", fmt.Errorf("read the task this session handles: %w", err)
	}
	if h.Hops+1 > hops {
		hops, conv = h.Hops+1, h.ConversationID
	}
	return hops, conv, nil
}

// checkSelfSession refuses a live session's post to its own session: the
// targetSession names the session the post came through (its id or the
// name it told).
func checkSelfSession(t *tx, in relay.PostTaskInput) error {
	if !in.FromAgent || in.ReplySession == "" || in.TargetSession == "" || in.SenderSlug != in.RecipientSlug {
		return nil
	}
	self := in.TargetSession == in.ReplySession
	if !self {
		name, err := liveSessionName(t.ctx, t.tx, in.SenderSlug, in.ReplySession)
		if err != nil {
			return err
		}
		self = name != "" && name == in.TargetSession
	}
	if !self {
		return nil
	}
	return relay.Errorf(relay.ESelfTask,
		"This task names the session it is posted from (%s) as its target: a session cannot hand work to itself. Do the work here, or name another session.",
		in.TargetSession).WithDetails(map[string]any{"agent": in.SenderSlug, "session": in.ReplySession})
}

// liveSessionPost records the live session a post came through and, when
// the post comes from the agent's own token, returns the task the session
// is handling ("" for none) and makes it the post's parent when the post
// names none.
func (t *tx) liveSessionPost(in *relay.PostTaskInput) (string, error) {
	// For resolving its name only: a post does not make the session live
	// for delivery (no stream delivers its tasks).
	if err := t.seeLiveSession(in.SenderSlug, in.ReplySession, "", false); err != nil {
		return "", err
	}
	if !in.FromAgent {
		return "", nil
	}
	held, err := sessionTask(t, in.SenderSlug, in.ReplySession)
	if err != nil {
		return "", err
	}
	if in.ParentTaskID == "" {
		in.ParentTaskID = held
	}
	return held, nil
}
