package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Posting a task: PostTask reads what the post's checks need inside its
// write and runs them (relay's lifecycle_post.go holds the rules), then
// inserts the task and hands it off (task_claim.go).

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
		if err := relay.CheckRecipient(recipient); err != nil {
			return err
		}
		if err := relay.CheckSelfSession(in, func() (string, error) {
			return liveSessionName(t.ctx, t.tx, in.SenderSlug, in.ReplySession)
		}); err != nil {
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
			if err := relay.CheckParent(parent, in.SenderSlug); err != nil {
				return err
			}
			depth, conv = parent.Depth+1, parent.ConversationID
			var hopsConv string
			if hops, hopsConv, err = heldHops(t, held, parent); err != nil {
				return err
			}
			if in.FromAgent {
				if err := checkHops(t, hops, hopsConv); err != nil {
					return relay.InferredParent(err, held, explicit)
				}
			}
		}
		if err := relay.CheckCapabilities(recipient.Slug, recipient.Capabilities, in.RequiredCapabilities); err != nil {
			return err
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

// countOpenSQL reads the open-task cap (NULL when never set) and counts a
// sender's open tasks up to it, in one statement. INDEXED BY makes SQLite
// use the small partial index of open tasks (migrations 0011 and 0012), or
// fail if it is gone, rather than walk every task the sender ever sent; the
// status condition is the index's own, word for word. The LIMIT is a
// subquery with nothing bound in it, so the statement stays prepared (see
// limitSQL).
var countOpenSQL = `SELECT (SELECT value FROM settings WHERE key = '` + keyMaxOpenTasks + `'),
	(SELECT COUNT(*) FROM (SELECT 1 FROM tasks INDEXED BY tasks_sender_open
		WHERE sender_slug = ? AND (status = 'queued' OR status = 'claimed' OR status = 'blocked')
		LIMIT COALESCE((SELECT CAST(value AS INTEGER) FROM settings WHERE key = '` + keyMaxOpenTasks + `'), ` +
	strconv.Itoa(relay.DefaultMaxOpenTasksPerSender) + `)))`

// checkOpenTasks counts sender's open tasks (queued, claimed or blocked)
// up to the configured cap and holds them to it (relay.CheckOpenTasks).
func checkOpenTasks(t *tx, sender string) error {
	var (
		stored sql.NullString
		open   int
	)
	if err := t.tx.QueryRowContext(t.ctx, countOpenSQL, sender).Scan(&stored, &open); err != nil {
		return fmt.Errorf("count open tasks of %s: %w", sender, err)
	}
	limit := relay.DefaultMaxOpenTasksPerSender
	if stored.Valid && stored.String != "" {
		n, err := strconv.Atoi(stored.String)
		if err != nil {
			return fmt.Errorf("read open-task cap: setting %s = %q: %w", keyMaxOpenTasks, stored.String, err)
		}
		limit = n
	}
	return relay.CheckOpenTasks(open, limit)
}

// heldHops is relay.PostHops for a post whose parent is parent, made while
// the posting session handles the task held ("" for none), which it reads.
func heldHops(t *tx, held string, parent relay.Task) (int, string, error) {
	if held == "" || held == parent.ID {
		hops, conv := relay.PostHops(parent, nil)
		return hops, conv, nil
	}
	h, err := getTask(t.ctx, t.tx, held)
	if err != nil {
		return 0, "", fmt.Errorf("read the task this session handles: %w", err)
	}
	hops, conv := relay.PostHops(parent, &h)
	return hops, conv, nil
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
