package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// viaDashboard marks text written by the operator on an agent's behalf.
const viaDashboard = " (via dashboard)"

// byOperator appends " (via dashboard)" to text when the operator acts on an
// agent's behalf.
func byOperator(ctx context.Context, text string) string {
	if relay.IsByOperator(ctx) {
		return text + viaDashboard
	}
	return text
}

// chainLimit reads the hand-off depth limit from settings.
func chainLimit(ctx context.Context, q queryer) (int, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, keyChainMaxDepth).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return relay.DefaultChainLimit, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read chain limit: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("read chain limit: setting %s = %q: %w", keyChainMaxDepth, v, err)
	}
	return n, nil
}

// checkHops refuses a hand-off that would take conversation conv to hops
// hand-offs from its first task when the hand-off limit is lower.
func checkHops(t *tx, hops int, conv string) error {
	limit, err := chainLimit(t.ctx, t.tx)
	if err != nil {
		return err
	}
	if hops <= limit {
		return nil
	}
	return relay.Errorf(relay.EChainLimit,
		"This task would be %d hand-offs away from the person who started the work (conversation %s), and the limit is %d. Do the work yourself, or answer BLOCKED: with what you need.",
		hops, conv, limit).WithDetails(map[string]any{"depth": hops, "limit": limit, "conversationId": conv})
}

// PostTask queues a task for its recipient and wakes the recipient's waiting claims.
func (db *DB) PostTask(ctx context.Context, in relay.PostTaskInput) (relay.Task, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Task{}, err
	}
	if in, err = db.resolveTarget(ctx, in); err != nil {
		return relay.Task{}, err
	}
	in.Title, in.Instructions = db.scrub(in.Title), db.scrub(in.Instructions)
	var out relay.Task
	err = db.write(ctx, "post task", func(t *tx) error {
		// touch refuses an unknown sender (unknown_agent); if a later check
		// fails, the savepoint undoes it.
		if err := t.touch(in.SenderSlug); err != nil {
			return err
		}
		if err := checkOpenTasks(t, in.SenderSlug); err != nil {
			return err
		}
		recipient, err := getAgent(t.ctx, t.tx, in.RecipientSlug, t.now, &t.db.book)
		if err != nil {
			return err
		}
		if recipient.RetiredAt != "" {
			return relay.RetiredRecipient(recipient.Slug)
		}
		if err := checkSelfSession(t, in); err != nil {
			return err
		}
		held, explicit := "", in.ParentTaskID != ""
		if in.ReplySession != "" {
			if held, err = t.liveSessionPost(&in); err != nil {
				return err
			}
		}
		id := relay.NewID()
		depth, hops, conv := 0, 0, id
		if in.ParentTaskID != "" {
			parent, err := getTask(t.ctx, t.tx, in.ParentTaskID)
			if err != nil {
				return err
			}
			if parent.SenderSlug != in.SenderSlug && parent.RecipientSlug != in.SenderSlug {
				return relay.Errorf(relay.ETaskAccessDenied, "A task can only be linked to a task you sent or received.")
			}
			depth, conv = parent.Depth+1, parent.ConversationID
			var hopsConv string
			if hops, hopsConv, err = heldHops(t, held, parent); err != nil {
				return err
			}
			if in.FromAgent {
				if err := checkHops(t, hops, hopsConv); err != nil {
					return inferredParent(err, held, explicit)
				}
			}
		}
		if missing := missingCapabilities(recipient.Capabilities, in.RequiredCapabilities); len(missing) > 0 {
			return relay.Errorf(relay.ERecipientLacksCapability, "Cannot assign to %s: it does not advertise %s.",
				recipient.Slug, strings.Join(missing, ", ")).WithDetails(map[string]any{"missingCapabilities": missing})
		}
		var convCol any // NULL: the task starts its own conversation
		if conv != id {
			convCol = conv
		}
		if _, err := t.exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status,
				created_at, updated_at, parent_task_id, depth, conversation_id, hops, target_session, reply_session)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, in.SenderSlug, in.RecipientSlug, in.Title, in.Instructions, capsJSON(in.RequiredCapabilities), in.Priority,
			t.ts, t.ts, nullString(in.ParentTaskID), depth, convCol, hops, nullString(in.TargetSession), nullString(in.ReplySession)); err != nil {
			return fmt.Errorf("insert task: %w", err)
		}
		// The answer is the row just inserted; no need to read it back.
		caps := append([]string{}, in.RequiredCapabilities...)
		out = relay.Task{ID: id, SenderSlug: in.SenderSlug, RecipientSlug: in.RecipientSlug, Title: in.Title,
			Instructions: in.Instructions, RequiredCapabilities: caps, Priority: in.Priority, Status: relay.StatusQueued,
			CreatedAt: t.ts, UpdatedAt: t.ts, ParentTaskID: in.ParentTaskID, Depth: depth,
			ConversationID: conv, Hops: hops, TargetSession: in.TargetSession, ReplySession: in.ReplySession, Reports: []relay.Report{}}
		t.taskKnown(out)
		return t.handOff(out)
	})
	return out, err
}

// handOff gives a task just posted to the oldest claim waiting for it
// (handoff.go): claimed in this transaction for that claim, whose agent
// is present now, and handed to it after the commit. A task aimed at a
// live session (liveTargetSQL) goes only to a claim that does not leave it
// (ClaimInput.LeaveLiveSessions): that session's own, or a worker bound to
// it. With no such claim, the recipient's waiting claims are woken to look
// for it.
func (t *tx) handOff(task relay.Task) error {
	live := false
	if task.TargetSession != "" {
		var one int
		err := t.tx.QueryRowContext(t.ctx, `SELECT 1 FROM (SELECT ? AS recipient_slug, ? AS target_session) t WHERE `+liveTargetSQL,
			task.RecipientSlug, task.TargetSession, liveStreamCutoff(t)).Scan(&one)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read live session: %w", err)
		}
		live = err == nil
	}
	p := t.db.parking.take(task.RecipientSlug, task.SenderSlug, task.TargetSession, live)
	if p == nil {
		t.wakeUp(task.RecipientSlug)
		return nil
	}
	t.handoffs = append(t.handoffs, handoff{p: p}) // released if this write fails
	claimed, err := t.claim(p.c, task)
	if err != nil {
		return err
	}
	t.handoffs[len(t.handoffs)-1].task = claimed
	return t.present(task.RecipientSlug)
}

func missingCapabilities(have, need []string) []string {
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
