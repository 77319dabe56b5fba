package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TaskMark returns the signature mark of a remote task, "" for a local one.
func (db *DB) TaskMark(ctx context.Context, taskID string) (string, error) {
	return optionalString(ctx, db.r, "read task mark", `SELECT mark FROM mesh_tasks WHERE task_id = ?`, taskID)
}

// isLocalAgent reports whether slug is an agent of this relay (not a placeholder).
func (t *tx) isLocalAgent(slug string) (bool, error) {
	var remote sql.NullString
	err := t.tx.QueryRowContext(t.ctx, `SELECT m.relay_id FROM agents a LEFT JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = ?`, slug).Scan(&remote)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find agent %s: %w", slug, err)
	}
	return !remote.Valid, nil
}

// copyReports appends the reports of task that are not on the local timeline yet.
func (t *tx) copyReports(task relay.Task) error {
	for _, r := range task.Reports {
		kind := r.Kind
		switch kind {
		case relay.ReportProgress, relay.ReportCompleted, relay.ReportBlocked, relay.ReportChanges:
		default:
			continue
		}
		if _, err := t.exec(`INSERT INTO reports (id, task_id, kind, message, result, created_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, r.ID, task.ID, kind, r.Message, nullString(r.Result), r.CreatedAt); err != nil {
			return fmt.Errorf("copy report: %w", err)
		}
	}
	return nil
}

// ApplyRemote stores a change from another relay once: a new task for a
// local recipient (its sender qualified with the sending relay), a sender's
// action on a task owned here (only from the relay that sent it), or a
// task's new state for a task a local agent sent (only from the relay that
// owns it). It commits before it returns and reports false when the message
// was applied before. A change the sending relay has no right to make is
// refused with a *relay.MeshRefusal and nothing is stored.
func (db *DB) ApplyRemote(ctx context.Context, in relay.RemoteApply) (bool, error) {
	switch in.Mark {
	case relay.MarkVerified, relay.MarkUnverified, relay.MarkMismatch:
	default:
		return false, fmt.Errorf("apply remote: mark %q", in.Mark)
	}
	if in.MsgID == "" || in.FromRelay == "" {
		return false, fmt.Errorf("apply remote: message id and relay are required")
	}
	applied := false
	err := db.write(ctx, "apply remote", func(t *tx) error {
		var one int
		err := t.tx.QueryRowContext(t.ctx, `SELECT 1 FROM mesh_applied WHERE msg_id = ?`, in.MsgID).Scan(&one)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("find applied message: %w", err)
		}
		applied = true
		rt := in.Change.Task
		if _, err := t.exec(`INSERT INTO mesh_applied (msg_id, from_relay, task_id, mark, applied_at) VALUES (?, ?, ?, ?, ?)`,
			in.MsgID, in.FromRelay, rt.ID, in.Mark, t.ts); err != nil {
			return fmt.Errorf("record applied message: %w", err)
		}
		if _, err := relay.TaskID("taskId", rt.ID); err != nil || !rt.Status.Valid() {
			return nil // nothing this relay can store; recorded as applied
		}
		if _, err := (relay.PostTaskInput{SenderSlug: rt.SenderSlug, RecipientSlug: rt.RecipientSlug, Title: rt.Title,
			Instructions: rt.Instructions, RequiredCapabilities: rt.RequiredCapabilities}).Validate(); err != nil {
			return nil // out of bounds: no relay of this build writes that; recorded as applied
		}
		local, err := getTask(t.ctx, t.tx, rt.ID)
		var de *relay.Error
		exists := err == nil
		if err != nil && !(errors.As(err, &de) && de.Code == relay.EUnknownTask) {
			return err
		}
		if !exists {
			if !rt.Status.Open() || in.Change.Event != nil && (in.Change.Event.Type == relay.EventTaskCancelled || in.Change.Event.Type == relay.EventTaskRequeued) {
				// A cancel, a requeue or a closed task's state never creates a task.
				return &relay.MeshRefusal{Reason: "closed-task", Detail: fmt.Sprintf("task %s is not known here and arrived as %s, not as a new task", rt.ID, rt.Status)}
			}
			recipient := localName(rt.RecipientSlug, in.SelfID, in.SelfName)
			known, err := t.isLocalAgent(recipient)
			if err != nil {
				return err
			}
			if !known {
				return &relay.MeshRefusal{Reason: "recipient", Detail: fmt.Sprintf("task %s: %s is not an agent of this relay", rt.ID, rt.RecipientSlug)}
			}
			fromName := in.FromName
			if strings.EqualFold(RelayLabel(fromName), RelayLabel(in.SelfName)) {
				fromName = "" // a relay named as this one is named by its id
			}
			sender, err := t.qualify(rt.SenderSlug, in.FromRelay, fromName)
			if err != nil {
				return err
			}
			rt.SenderSlug, rt.RecipientSlug = sender, recipient
			if err := t.applyNewTask(in.FromRelay, rt); err != nil {
				return err
			}
		} else {
			var peer, side string
			err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id, side FROM mesh_task_peers WHERE task_id = ?`, rt.ID).Scan(&peer, &side)
			if errors.Is(err, sql.ErrNoRows) {
				return &relay.MeshRefusal{Reason: "local-task", Detail: fmt.Sprintf("task %s never crossed to relay %s", rt.ID, in.FromRelay)}
			}
			if err != nil {
				return fmt.Errorf("find task peer: %w", err)
			}
			if peer != in.FromRelay {
				return &relay.MeshRefusal{Reason: side, Detail: fmt.Sprintf("task %s: only its %s relay %s may change it, not %s", rt.ID, side, peer, in.FromRelay)}
			}
			if side == "sender" {
				err = t.applyCommand(in.FromRelay, local, in.Change)
			} else {
				err = t.applyState(local, rt, in.Change.Event)
			}
			if err != nil {
				return err
			}
		}
		if _, err := t.exec(`INSERT INTO mesh_tasks (task_id, relay_id, mark) VALUES (?, ?, ?)
			ON CONFLICT (task_id) DO UPDATE SET mark = excluded.mark`, rt.ID, in.FromRelay, in.Mark); err != nil {
			return fmt.Errorf("mark remote task: %w", err)
		}
		_, err = t.taskChanged(rt.ID)
		return err
	})
	if err != nil {
		applied = false
	}
	return applied, err
}

// applyNewTask stores a task a remote agent posted to a local one, with the
// same id, and wakes the recipient's waiting claims.
func (t *tx) applyNewTask(from string, rt relay.Task) error {
	var parent any
	if rt.ParentTaskID != "" {
		var one int
		if err := t.tx.QueryRowContext(t.ctx, `SELECT 1 FROM tasks WHERE id = ?`, rt.ParentTaskID).Scan(&one); err == nil {
			parent = rt.ParentTaskID
		}
	}
	prio, err := relay.Priority("priority", rt.Priority)
	if err != nil {
		prio = relay.PriorityNormal
	}
	conv, hops, target := remoteConversation(rt)
	if _, err := t.exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status,
			created_at, updated_at, parent_task_id, depth, conversation_id, hops, target_session)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)`,
		rt.ID, rt.SenderSlug, rt.RecipientSlug, rt.Title, rt.Instructions, capsJSON(rt.RequiredCapabilities), prio,
		rt.CreatedAt, t.ts, parent, rt.Depth, conv, hops, target); err != nil {
		return fmt.Errorf("insert remote task: %w", err)
	}
	if _, err := t.exec(`INSERT INTO mesh_task_peers (task_id, relay_id, side) VALUES (?, ?, 'sender')`, rt.ID, from); err != nil {
		return fmt.Errorf("record task sender relay: %w", err)
	}
	if err := t.copyReports(rt); err != nil {
		return err
	}
	t.wakeUp(rt.RecipientSlug)
	return nil
}

// applyCommand carries out a remote sender's action on a task owned here:
// cancel an open task, or requeue a blocked or completed one. An action the
// task's state no longer allows changes nothing here; the sender's relay is
// sent the task's true state instead.
func (t *tx) applyCommand(from string, local relay.Task, c relay.MeshChange) error {
	ev := c.Event
	if ev == nil {
		return nil
	}
	var q string
	switch {
	case ev.Type == relay.EventTaskCancelled && local.Status.Open():
		q = `UPDATE tasks SET status = 'cancelled', lease_expires_at = NULL, updated_at = ? WHERE id = ?`
	case ev.Type == relay.EventTaskRequeued && (local.Status == relay.StatusBlocked || local.Status == relay.StatusCompleted):
		q = `UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?`
		t.wakeUp(local.RecipientSlug)
	default:
		if _, err := t.exec(`INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at) VALUES (lower(hex(randomblob(16))), ?, ?, ?)`,
			from, local.ID, t.ts); err != nil {
			return fmt.Errorf("queue task state: %w", err)
		}
		return nil
	}
	if _, err := t.exec(q, t.ts, local.ID); err != nil {
		return fmt.Errorf("apply sender action: %w", err)
	}
	if err := t.copyReports(c.Task); err != nil {
		return err
	}
	return t.event(local.RecipientSlug, ev.Type, local.ID, ev.Summary)
}

// applyState brings the mirror of a task a local agent sent to the owner's
// state and adds the owner's journal entry for the sender (the owner names
// the sender in its own way: the entry goes to the local sender of the
// task). The mirror keeps no lease: only the owner requeues expired claims.
func (t *tx) applyState(local relay.Task, rt relay.Task, ev *relay.MeshEvent) error {
	via := nullString(rt.ClaimedVia)
	if rt.ClaimedVia != relay.ViaChat && rt.ClaimedVia != relay.ViaWorker {
		via = nil
	}
	if _, err := t.exec(`UPDATE tasks SET status = ?, claimed_at = ?, claimed_via = ?, lease_expires_at = NULL, updated_at = ? WHERE id = ?`,
		string(rt.Status), nullString(rt.ClaimedAt), via, t.ts, local.ID); err != nil {
		return fmt.Errorf("update mirror task: %w", err)
	}
	if err := t.copyReports(rt); err != nil {
		return err
	}
	if ev != nil && ev.RecipientSlug == rt.SenderSlug {
		return t.event(local.SenderSlug, ev.Type, local.ID, ev.Summary)
	}
	return nil
}

// PruneApplied forgets applied message ids older than age; age must exceed
// the stream's retention, so a message still in the stream is always known.
func (db *DB) PruneApplied(ctx context.Context, age time.Duration) (int, error) {
	var n int64
	err := db.write(ctx, "prune applied messages", func(t *tx) error {
		var err error
		n, err = t.execCount("prune applied messages", `DELETE FROM mesh_applied WHERE applied_at < ?`, relay.FormatTime(t.now.Add(-age)))
		return err
	})
	return int(n), err
}
