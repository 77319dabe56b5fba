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

// The mesh side of the store (relay.MeshStore). The outbox rows themselves
// are written by triggers (migration 0005) in the transaction of the change
// they carry, so every existing code path (post, claim, report, sweep,
// cancel, …) feeds the mesh without knowing about it.

var _ relay.MeshStore = (*DB)(nil)

// PendingOutbox returns up to limit outbox rows, oldest first, each with the
// task's current state, leaving out the rows for the relays in skip (each
// relay's rows keep their order: all of them wait). A row whose task is
// gone carries only the task id.
func (db *DB) PendingOutbox(ctx context.Context, limit int, skip ...string) ([]relay.OutboxItem, error) {
	limit = relay.Clamp(limit, 100, 1, 1000)
	where := ""
	args := make([]any, 0, len(skip))
	if len(skip) > 0 {
		where = ` WHERE to_relay NOT IN (` + strings.TrimSuffix(strings.Repeat("?,", len(skip)), ",") + `)`
		for _, r := range skip {
			args = append(args, r)
		}
	}
	var out []relay.OutboxItem
	err := db.read(ctx, "read outbox", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, msg_id, to_relay, task_id, event_recipient, event_type, event_summary, event_created_at
			FROM mesh_outbox`+where+` ORDER BY seq`+limitSQL(limit), args...)
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		type row struct {
			item                    relay.OutboxItem
			taskID                  string
			recipient, typ, sum, at sql.NullString
		}
		var rs []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.item.Seq, &r.item.MsgID, &r.item.ToRelay, &r.taskID, &r.recipient, &r.typ, &r.sum, &r.at); err != nil {
				rows.Close()
				return fmt.Errorf("read outbox: %w", err)
			}
			rs = append(rs, r)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		tasks := map[string]relay.Task{}
		for _, r := range rs {
			task, ok := tasks[r.taskID]
			if !ok {
				t, err := getTask(ctx, tx, r.taskID)
				var de *relay.Error
				switch {
				case errors.As(err, &de) && de.Code == relay.EUnknownTask:
					t = relay.Task{ID: r.taskID}
				case err != nil:
					return err
				}
				task, tasks[r.taskID] = t, t
			}
			r.item.Change.Task = task
			if r.typ.Valid {
				r.item.Change.Event = &relay.MeshEvent{ID: r.item.MsgID, RecipientSlug: r.recipient.String,
					Type: r.typ.String, Summary: r.sum.String, CreatedAt: r.at.String}
			}
			out = append(out, r.item)
		}
		return nil
	})
	return out, err
}

// DeleteOutbox removes published outbox rows.
func (db *DB) DeleteOutbox(ctx context.Context, seqs ...int64) error {
	if len(seqs) == 0 {
		return nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(seqs)), ",")
	args := make([]any, len(seqs))
	for i, s := range seqs {
		args[i] = s
	}
	return db.writeOne(ctx, "delete outbox", `DELETE FROM mesh_outbox WHERE seq IN (`+marks+`)`, args...)
}

// OutboxDepth counts outbox rows not yet published.
func (db *DB) OutboxDepth(ctx context.Context) (int, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM mesh_outbox`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

// RemoteRelayOf returns the id of the relay owning slug, "" when slug is local or unknown.
func (db *DB) RemoteRelayOf(ctx context.Context, slug string) (string, error) {
	return optionalString(ctx, db.r, "find agent relay", `SELECT relay_id FROM mesh_agents WHERE slug = ?`, slug)
}

// LocalAgents returns this relay's own software agents (no placeholders, no
// human operator), ordered by slug: what it advertises in the directory.
func (db *DB) LocalAgents(ctx context.Context) ([]relay.Agent, error) {
	return queryAll(ctx, db.r, "list local agents", agentScanner(db.now().UTC()), `SELECT `+agentColumns+` FROM agents
		WHERE kind = 'agent' AND slug NOT IN (SELECT slug FROM mesh_agents) ORDER BY slug`)
}

// SyncRemoteAgents adds and updates the placeholders of remote agents.
// Placeholders no longer listed stay (their tasks name them); they go
// offline on their own as their last-seen time ages.
func (db *DB) SyncRemoteAgents(ctx context.Context, agents []relay.RemoteAgent) ([]string, error) {
	var conflicts []string
	err := db.write(ctx, "sync remote agents", func(t *tx) error {
		conflicts = conflicts[:0]
		for _, a := range agents {
			slug, err := relay.NormalizeSlug("slug", a.Slug)
			if err != nil || a.RelayID == "" || relay.IsQualified(slug) {
				continue // a bad directory entry is skipped, not fatal
			}
			var (
				remote                      sql.NullString
				name, model, caps, lastSeen string
				details                     sql.NullString
				relayName                   sql.NullString
			)
			err = t.tx.QueryRowContext(t.ctx, `SELECT m.relay_id, m.relay_name, a.display_name, a.model_slug, a.capabilities, a.details, a.last_seen_at
				FROM agents a LEFT JOIN mesh_agents m ON m.slug = a.slug WHERE a.slug = ?`, slug).
				Scan(&remote, &relayName, &name, &model, &caps, &details, &lastSeen)
			exists := err == nil
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("find agent %s: %w", slug, err)
			}
			if exists && !remote.Valid {
				conflicts = append(conflicts, slug)
				continue
			}
			display := a.DisplayName
			if display == "" {
				display = slug
			}
			capsJ := capsJSON(a.Capabilities)
			seen := lastSeen
			if a.Online || !exists {
				seen = t.ts
				if !a.Online {
					seen = relay.FormatTime(t.now.Add(-relay.OnlineWindow - 1))
				}
			}
			if exists && remote.String == a.RelayID && relayName.String == a.RelayName && name == display && model == a.ModelSlug &&
				caps == capsJ && details.String == a.Details && availability(seen, t.now) == availability(lastSeen, t.now) {
				continue
			}
			if _, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, details, registered_at, last_seen_at, last_read_sequence)
				VALUES (?, 'agent', ?, ?, ?, ?, ?, ?, 0)
				ON CONFLICT (slug) DO UPDATE SET display_name = excluded.display_name, model_slug = excluded.model_slug,
					capabilities = excluded.capabilities, details = excluded.details, last_seen_at = excluded.last_seen_at`,
				slug, display, a.ModelSlug, capsJ, nullString(a.Details), t.ts, seen); err != nil {
				return fmt.Errorf("store remote agent %s: %w", slug, err)
			}
			if _, err := t.exec(`INSERT INTO mesh_agents (slug, relay_id, relay_name) VALUES (?, ?, ?)
				ON CONFLICT (slug) DO UPDATE SET relay_id = excluded.relay_id, relay_name = excluded.relay_name`,
				slug, a.RelayID, a.RelayName); err != nil {
				return fmt.Errorf("store remote agent %s: %w", slug, err)
			}
			if err := t.agentChanged(slug); err != nil {
				return err
			}
		}
		return nil
	})
	return conflicts, err
}

// PinRelayKey records key as relayID's public key the first time one is
// seen, and returns the pinned key ("" when none is known and key is "").
func (db *DB) PinRelayKey(ctx context.Context, relayID, key string) (string, error) {
	var pinned string
	err := db.write(ctx, "pin relay key", func(t *tx) error {
		if key != "" {
			if _, err := t.exec(`INSERT INTO mesh_relays (relay_id, public_key, first_seen) VALUES (?, ?, ?) ON CONFLICT (relay_id) DO NOTHING`,
				relayID, key, t.ts); err != nil {
				return fmt.Errorf("pin relay key: %w", err)
			}
		}
		err := t.tx.QueryRowContext(t.ctx, `SELECT public_key FROM mesh_relays WHERE relay_id = ?`, relayID).Scan(&pinned)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read relay key: %w", err)
		}
		return nil
	})
	return pinned, err
}

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
			recipient := localName(rt.RecipientSlug, in.SelfID, in.SelfName)
			known, err := t.isLocalAgent(recipient)
			if err != nil {
				return err
			}
			if !known {
				return &relay.MeshRefusal{Reason: "recipient", Detail: fmt.Sprintf("task %s: %s is not an agent of this relay", rt.ID, rt.RecipientSlug)}
			}
			sender, err := t.qualify(rt.SenderSlug, in.FromRelay, in.FromName)
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

// RelayLabel is the part after @ in the qualified names of a relay's
// agents: its name in slug characters, or "" when nothing of it is left.
func RelayLabel(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	l := strings.Trim(b.String(), "-._")
	if len(l) > 40 {
		l = strings.Trim(l[:40], "-._")
	}
	if len(l) < 2 {
		return ""
	}
	return l
}

// localName maps a recipient another relay named slug@<this relay> back to
// the local slug.
func localName(slug, selfID, selfName string) string {
	i := strings.IndexByte(slug, '@')
	if i < 0 {
		return slug
	}
	if q := slug[i+1:]; q == selfID || (q != "" && q == RelayLabel(selfName)) {
		return slug[:i]
	}
	return slug
}

// qualify names the sender slug of relay from as this relay stores it: the
// plain slug when the directory (of trusted relays) gives it to that relay,
// else slug@relay-name (slug@relay-id when another relay holds that name),
// a placeholder of that relay which no local agent can be.
func (t *tx) qualify(slug, from, fromName string) (string, error) {
	if i := strings.IndexByte(slug, '@'); i > 0 {
		slug = slug[:i] // a relay names only its own agents
	}
	var owner sql.NullString
	err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id FROM mesh_agents WHERE slug = ?`, slug).Scan(&owner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("find agent %s: %w", slug, err)
	}
	if owner.Valid && owner.String == from {
		return slug, nil
	}
	q := ""
	if l := RelayLabel(fromName); l != "" {
		q = slug + "@" + l
		var holder string
		err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id FROM mesh_agents WHERE slug = ?`, q).Scan(&holder)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("find agent %s: %w", q, err)
		}
		if err == nil && holder != from {
			q = ""
		}
	}
	if q == "" {
		q = slug + "@" + from
	}
	if fromName == "" {
		fromName = from
	}
	res, err := t.exec(`INSERT INTO agents (slug, kind, display_name, model_slug, capabilities, registered_at, last_seen_at, last_read_sequence)
		VALUES (?, 'agent', ?, '', '[]', ?, ?, 0) ON CONFLICT (slug) DO NOTHING`, q, slug+"@"+fromName, t.ts, t.ts)
	if err != nil {
		return "", fmt.Errorf("store remote sender %s: %w", q, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", err
	} else if n > 0 {
		if _, err := t.exec(`INSERT INTO mesh_agents (slug, relay_id, relay_name) VALUES (?, ?, ?)
			ON CONFLICT (slug) DO UPDATE SET relay_id = excluded.relay_id, relay_name = excluded.relay_name`, q, from, fromName); err != nil {
			return "", fmt.Errorf("store remote sender %s: %w", q, err)
		}
		if err := t.agentChanged(q); err != nil {
			return "", err
		}
	}
	return q, nil
}

// remoteConversation is the conversation column (NULL when the task started
// its own), hop count and target session column of a task another relay
// sent, so the hand-off limit keeps counting across relays. Hops below the
// depth are not taken; an invalid id or session name is dropped.
func remoteConversation(rt relay.Task) (conv any, hops int, target any) {
	if rt.ConversationID != "" && rt.ConversationID != rt.ID {
		if id, err := relay.TaskID("conversationId", rt.ConversationID); err == nil {
			conv = id
		}
	}
	if s, err := relay.TargetSession("targetSession", rt.TargetSession); err == nil && s != "" {
		target = s
	}
	return conv, max(rt.Hops, rt.Depth, 0), target
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
