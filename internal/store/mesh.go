package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	var args []any
	if len(skip) > 0 {
		var list string
		list, args = inList(skip)
		where = ` WHERE to_relay NOT IN ` + list
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
			if r.item.Change.Task, err = remoteIDs(ctx, tx, task, r.item.ToRelay); err != nil {
				return err
			}
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
	list, args := inList(seqs)
	return db.writeOne(ctx, "delete outbox", `DELETE FROM mesh_outbox WHERE seq IN `+list, args...)
}

// OutboxDepth counts outbox rows not yet published.
func (db *DB) OutboxDepth(ctx context.Context) (int, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM mesh_outbox`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

// remoteIDs gives a task the ids relay to knows it and its parent and
// conversation by: a task it sent here may be stored under an id of this
// relay's (mesh_ids.go), and goes back under its own.
func remoteIDs(ctx context.Context, q queryer, task relay.Task, to string) (relay.Task, error) {
	for _, id := range []*string{&task.ID, &task.ParentTaskID, &task.ConversationID} {
		if *id == "" {
			continue
		}
		var remote string
		err := q.QueryRowContext(ctx, `SELECT remote_id FROM mesh_task_peers WHERE task_id = ? AND relay_id = ?`, *id, to).Scan(&remote)
		switch {
		case err == nil && remote != "":
			*id = remote
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return task, fmt.Errorf("read the id relay %s knows task %s by: %w", to, *id, err)
		}
	}
	return task, nil
}
