package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TaskMark returns the signature mark of a remote task, "" for a local one.
func (m *Mesh) TaskMark(ctx context.Context, taskID string) (string, error) {
	return optionalString(ctx, m.db.r, "read task mark", `SELECT mark FROM mesh_tasks WHERE task_id = ?`, taskID)
}

// isLocalAgent reports whether slug is an agent of this relay (not a
// placeholder), and whether it is retired.
func (t *tx) isLocalAgent(slug string) (local, retired bool, err error) {
	var remote, retiredAt sql.NullString
	err = t.tx.QueryRowContext(t.ctx, `SELECT m.relay_id, a.retired_at FROM agents a LEFT JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = +?`, slug).Scan(&remote, &retiredAt)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("find agent %s: %w", slug, err)
	}
	return !remote.Valid, retiredAt.Valid, nil
}

// ApplyRemote stores a change from another relay once: a new task for a
// local recipient (its sender qualified with the sending relay), a sender's
// action on a task owned here (only from the relay that sent it), or a
// task's new state for a task a local agent sent (only from the relay that
// owns it). Ids are their relay's (mesh_ids.go): a message is known by
// (sending relay, message id), a task by (the other relay, the id it knows
// it by), so a relay can neither pass another's message off as applied nor
// reach another's task. It commits before it returns and reports false when
// the message was applied before. A change the sending relay has no right
// to make is refused with a *relay.MeshRefusal, and one that arrived before
// an earlier message of its task with relay.ErrEarlierMissing; nothing is
// then stored, nor the message recorded as applied.
//
// It is ApplyRemoteBatch with one change.
func (m *Mesh) ApplyRemote(ctx context.Context, in relay.RemoteApply) (bool, error) {
	res, err := m.ApplyRemoteBatch(ctx, []relay.RemoteApply{in})
	if err != nil {
		return false, err
	}
	return res[0].Applied, res[0].Err
}

// ApplyRemoteBatch applies messages from other relays in order, as
// ApplyRemote does each, in one write (so one commit with whatever else the
// writer groups with it): each in a savepoint of its own, so one refused,
// out of order or failing is rolled back alone and answered in its result,
// and the others commit. The results are final only when the error is nil:
// with an error nothing of the batch is in the database.
func (m *Mesh) ApplyRemoteBatch(ctx context.Context, ins []relay.RemoteApply) ([]relay.ApplyResult, error) {
	out := make([]relay.ApplyResult, len(ins))
	if len(ins) == 0 {
		return out, nil
	}
	err := m.db.write(ctx, "apply remote batch", func(t *tx) error {
		for i, in := range ins {
			if err := checkRemoteApply(in); err != nil {
				out[i] = relay.ApplyResult{Err: err}
				continue
			}
			applied := false
			err, broken := t.savepoint("apply", func() error {
				var err error
				applied, err = t.applyRemote(in)
				return err
			})
			if broken != nil {
				return broken
			}
			out[i] = relay.ApplyResult{Applied: applied && err == nil, Err: err}
		}
		return nil
	})
	if err != nil {
		for i := range out {
			out[i] = relay.ApplyResult{Err: err}
		}
		return out, err
	}
	return out, nil
}

// checkRemoteApply refuses a call no received message makes.
func checkRemoteApply(in relay.RemoteApply) error {
	switch in.Mark {
	case relay.MarkVerified, relay.MarkUnverified, relay.MarkMismatch:
	default:
		return fmt.Errorf("apply remote: mark %q", in.Mark)
	}
	if in.MsgID == "" || in.FromRelay == "" {
		return fmt.Errorf("apply remote: message id and relay are required")
	}
	return nil
}

// applyRemote applies one message in t (ApplyRemote) and reports whether
// it was new: recorded first, which says so in the same statement (a
// refused or out of order change fails, and its savepoint takes the record
// back), under the local id of its task.
func (t *tx) applyRemote(in relay.RemoteApply) (bool, error) {
	rt := in.Change.Task
	n, err := t.execCount("record applied message", `INSERT INTO mesh_applied (from_relay, msg_id, task_id, mark, applied_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (from_relay, msg_id) DO NOTHING`, in.FromRelay, in.MsgID, rt.ID, in.Mark, t.ts)
	if err != nil || n == 0 {
		return false, err
	}
	local := ""
	if _, err := relay.TaskID("taskId", rt.ID); err == nil && rt.Status.Valid() {
		if _, err := (relay.PostTaskInput{SenderSlug: rt.SenderSlug, RecipientSlug: rt.RecipientSlug, Title: rt.Title,
			Instructions: rt.Instructions, RequiredCapabilities: rt.RequiredCapabilities}).Validate(); err == nil {
			if local, err = t.applyChange(in); err != nil {
				return false, err
			}
		}
	}
	// Stored under another id, or nothing this relay can store (out of
	// bounds: no relay of this build writes that; the record names none).
	if local != rt.ID {
		if _, err := t.exec(`UPDATE mesh_applied SET task_id = ? WHERE from_relay = ? AND msg_id = ?`, local, in.FromRelay, in.MsgID); err != nil {
			return false, fmt.Errorf("record applied message: %w", err)
		}
	}
	return true, nil
}

// applyChange applies a change of relay in.FromRelay to the task it knows
// by the change's id, or stores it as a new task, and returns the task's
// local id. A numbered change (Seq) is applied in its task's order: one
// that comes before an earlier one waits (relay.ErrEarlierMissing) unless
// forced, and an earlier one applied after a later one (forced), or an
// unnumbered one after a numbered one, adds its reports and journal entry
// without taking the task's state back.
func (t *tx) applyChange(in relay.RemoteApply) (string, error) {
	rt, seq, first := in.Change.Task, in.Change.Seq, in.Change.Seq
	if in.Change.From > 0 && in.Change.From < seq {
		first = in.Change.From // it carries the messages From to Seq
	}
	peer, found, err := t.peerTaskSeq(in.FromRelay, rt.ID)
	if err != nil {
		return "", err
	}
	id, last := peer.local, peer.last
	next := int64(0) // the task's new in_seq, 0 for none
	stale := false
	switch {
	case seq <= 0:
		// Unnumbered (an older relay, or a row written before messages
		// were numbered): after a numbered one of its task, older than it.
		stale = found && last > 0
	case !found && first > 1, found && last >= 0 && first > last+1:
		if !in.Force {
			return "", relay.ErrEarlierMissing
		}
		next = seq
	case found && last >= 0 && seq <= last:
		stale = true
	default:
		next = seq
	}
	var task relay.Task // the task as this change leaves it
	if found {
		local, err := getTask(t.ctx, t.tx, id)
		if err != nil {
			return "", err
		}
		if peer.side == "sender" {
			task, err = t.applyCommand(in.FromRelay, local, in.Change, stale)
		} else {
			task, err = t.applyState(local, rt, in.Change.Event, stale)
		}
		if err != nil {
			return "", err
		}
		if next > 0 {
			if _, err := t.exec(`UPDATE mesh_task_peers SET in_seq = ? WHERE task_id = ?`, next, id); err != nil {
				return "", fmt.Errorf("record the task's last message: %w", err)
			}
		}
		t.taskKnown(task)
	} else if id, err = t.applyNewTask(in, next); err != nil { // it publishes the new task
		return "", err
	}
	if found && peer.mark == in.Mark {
		return id, nil // marked so already: the row would be written unchanged
	}
	if _, err := t.exec(`INSERT INTO mesh_tasks (task_id, relay_id, mark) VALUES (?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET mark = excluded.mark`, id, in.FromRelay, in.Mark); err != nil {
		return "", fmt.Errorf("mark remote task: %w", err)
	}
	return id, nil
}

// applyCommand carries out a remote sender's action on a task owned here,
// as relay.RemoteCommand allows it: cancel an open task, or requeue a
// blocked or completed one. An action the task's state no longer allows,
// or a stale one (older than one of the sender's applied already: it was
// applied out of order, and what the sender did since decides), changes
// nothing here; the sender's relay is sent the task's true state instead.
func (t *tx) applyCommand(from string, local relay.Task, c relay.MeshChange, stale bool) (relay.Task, error) {
	ev := c.Event
	if ev == nil {
		return local, nil
	}
	action := relay.RemoteCommand(ev.Type, local.Status)
	if stale {
		action = ""
	}
	var q string
	switch action {
	case relay.ActionCancel:
		q = `UPDATE tasks SET status = 'cancelled', lease_expires_at = NULL, updated_at = ? WHERE id = ?`
	case relay.ActionRequeue:
		q = `UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?`
		t.wakeUp(local.RecipientSlug)
	default:
		if _, err := t.exec(`INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at) VALUES (lower(hex(randomblob(16))), ?, ?, ?)`,
			from, local.ID, t.ts); err != nil {
			return local, fmt.Errorf("queue task state: %w", err)
		}
		return local, nil
	}
	if _, err := t.exec(q, t.ts, local.ID); err != nil {
		return local, fmt.Errorf("apply sender action: %w", err)
	}
	task := local
	task.LeaseExpiresAt, task.UpdatedAt = "", t.ts
	if action == relay.ActionCancel {
		task.Status = relay.StatusCancelled
	} else {
		task.Status, task.ClaimedAt, task.ClaimedVia = relay.StatusQueued, "", ""
	}
	added, err := t.copyReports(local.ID, c.Task.Reports)
	if err != nil {
		return local, err
	}
	task.Reports = append(slices.Clip(task.Reports), added...)
	return task, t.event(local.RecipientSlug, ev.Type, local.ID, ev.Summary)
}

// applyState brings the mirror of a task a local agent sent to the owner's
// state and adds the owner's journal entry for the sender (the owner names
// the sender in its own way: the entry goes to the local sender of the
// task), and returns the mirror as it leaves it. The mirror keeps no lease:
// only the owner requeues expired claims. A stale change (older than one
// applied) keeps the state as it is.
func (t *tx) applyState(local relay.Task, rt relay.Task, ev *relay.MeshEvent, stale bool) (relay.Task, error) {
	via := rt.ClaimedVia
	if via != relay.ViaChat && via != relay.ViaWorker {
		via = ""
	}
	task := local
	if !stale {
		if _, err := t.exec(`UPDATE tasks SET status = ?, claimed_at = ?, claimed_via = ?, lease_expires_at = NULL, updated_at = ? WHERE id = ?`,
			string(rt.Status), nullString(rt.ClaimedAt), nullString(via), t.ts, local.ID); err != nil {
			return local, fmt.Errorf("update mirror task: %w", err)
		}
		task.Status, task.ClaimedAt, task.ClaimedVia, task.LeaseExpiresAt, task.UpdatedAt = rt.Status, rt.ClaimedAt, via, "", t.ts
	}
	added, err := t.copyReports(local.ID, rt.Reports)
	if err != nil {
		return local, err
	}
	task.Reports = append(slices.Clip(task.Reports), added...)
	if ev != nil && ev.RecipientSlug == rt.SenderSlug {
		return task, t.event(local.SenderSlug, ev.Type, local.ID, ev.Summary)
	}
	return task, nil
}

// PruneApplied forgets applied message ids older than age; age must exceed
// the stream's retention, so a message still in the stream is always known.
func (m *Mesh) PruneApplied(ctx context.Context, age time.Duration) (int, error) {
	var n int64
	err := m.db.write(ctx, "prune applied messages", func(t *tx) error {
		var err error
		n, err = t.execCount("prune applied messages", `DELETE FROM mesh_applied WHERE applied_at < ?`, relay.FormatTime(t.now.Add(-age)))
		return err
	})
	return int(n), err
}
