package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The mesh side of the store (relay.MeshStore). The outbox rows themselves
// are written by triggers (migration 0005) in the transaction of the change
// they carry, so every existing code path (post, claim, report, sweep,
// cancel, …) feeds the mesh without knowing about it.

// Mesh is the store as the mesh sees it (relay.MeshStore): the outbox to
// publish, the changes other relays send, the names their agents have here,
// the relays seen and whether they are trusted, the envelopes held until
// they are. It is a view of a DB, not a second store: it reads through the
// DB's reader pool and writes through its one writer, as the DB's own
// methods do, so a change the mesh applies and one made here are ordered
// alike. The DB's own methods are what the relay itself asks of the store
// (relay.Service, the workers, the settings, the charts); the mesh's are
// here.
type Mesh struct{ db *DB }

// Mesh returns db's mesh side, what the mesh is given as its store.
func (db *DB) Mesh() *Mesh { return &Mesh{db: db} }

var _ relay.MeshStore = (*Mesh)(nil)

// PendingOutbox returns the outbox rows to publish now, oldest first, up
// to q.Limit, each with the task's current state: every row not in flight
// (q.Busy), of a task that does not wait for a retry (q.Waiting), for a
// relay trusted now (q.Skip: the rows of the others wait). Oldest first
// and cut by the limit, the rows of a task are a run in its order, after
// those in flight. A row whose task is gone carries only the task id.
func (m *Mesh) PendingOutbox(ctx context.Context, q relay.OutboxQuery) ([]relay.OutboxItem, error) {
	limit := relay.Clamp(q.Limit, 100, 1, 1000)
	query, args, err := outboxQuery(q.Skip, q.Waiting, limit+len(q.Busy))
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	busy := make(map[int64]bool, len(q.Busy))
	for _, seq := range q.Busy {
		busy[seq] = true
	}
	var out []relay.OutboxItem
	err = m.db.read(ctx, "read outbox", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		type row struct {
			item                    relay.OutboxItem
			recipient, typ, sum, at sql.NullString
		}
		var rs []row
		for len(rs) < limit && rows.Next() {
			var r row
			if err := rows.Scan(&r.item.Seq, &r.item.MsgID, &r.item.ToRelay, &r.item.TaskID, &r.item.Change.Seq, &r.recipient, &r.typ, &r.sum, &r.at); err != nil {
				rows.Close()
				return fmt.Errorf("read outbox: %w", err)
			}
			if !busy[r.item.Seq] {
				rs = append(rs, r)
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		// A state row followed by the next row of its task is carried by
		// that row, read in the same snapshot: one message for both.
		next := make(map[int]int, len(rs)) // row index → its task's next row
		last := map[string]int{}
		for i, r := range rs {
			if j, ok := last[r.item.TaskID]; ok {
				next[j] = i
			}
			last[r.item.TaskID] = i
		}
		tasks := map[string]relay.Task{}
		var merged map[int][]int64 // row index → rows it carries
		for i, r := range rs {
			j, ok := next[i]
			if !ok || r.typ.Valid || r.item.Change.Seq == 0 || rs[j].item.Change.Seq != r.item.Change.Seq+1 || rs[j].item.ToRelay != r.item.ToRelay {
				continue
			}
			if merged == nil {
				merged = map[int][]int64{}
			}
			merged[j] = append(append(merged[j], merged[i]...), r.item.Seq)
			delete(merged, i)
			rs[i].item.Seq = 0 // carried by row j
		}
		for i, r := range rs {
			if r.item.Seq == 0 {
				continue
			}
			if m := merged[i]; len(m) > 0 {
				r.item.Merged = m
				r.item.Change.From = r.item.Change.Seq - int64(len(m))
			}
			task, ok := tasks[r.item.TaskID]
			if !ok {
				t, err := getTask(ctx, tx, r.item.TaskID)
				var de *relay.Error
				switch {
				case errors.As(err, &de) && de.Code == relay.EUnknownTask:
					t = relay.Task{ID: r.item.TaskID}
				case err != nil:
					return err
				}
				task, tasks[r.item.TaskID] = t, t
			}
			if task.Status != "" {
				r.item.Version = stateVersion(string(task.Status), task.ClaimedAt, string(task.ClaimedVia), task.UpdatedAt, len(task.Reports))
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

// pow2 is the least power of two not below n (n ≥ 1): a limit written into
// the SQL (limitSQL) takes few values, so few statements stay prepared.
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// outboxQuery is the outbox read of PendingOutbox: the oldest rows, up to
// the least power of two not below limit, but those to a relay in skip or
// of a task in waiting. The rows in flight are left out by the caller as it
// reads: a list in the SQL (NOT IN over json_each) builds a temporary
// table, a page cache made and dropped on every read, and rows are nearly
// always in flight; skip and waiting are rarely anything but empty, and
// then are not in the SQL at all. Each list goes in as one JSON array, so
// the statement's text does not change with its length and stays prepared.
func outboxQuery(skip, waiting []string, limit int) (string, []any, error) {
	query := `SELECT o.seq, o.msg_id, o.to_relay, o.task_id, o.task_seq, o.event_recipient, o.event_type, o.event_summary, o.event_created_at
			FROM mesh_outbox o`
	var args []any
	for _, l := range []struct {
		column string
		vals   []string
	}{{"o.to_relay", skip}, {"o.task_id", waiting}} {
		if len(l.vals) == 0 {
			continue
		}
		b, err := json.Marshal(l.vals)
		if err != nil {
			return "", nil, err
		}
		if args == nil {
			query += ` WHERE `
		} else {
			query += ` AND `
		}
		query += l.column + ` NOT IN (SELECT value FROM json_each(?))`
		args = append(args, string(b))
	}
	return query + ` ORDER BY o.seq` + limitSQL(pow2(limit)), args, nil
}

// stateVersion is what a state row carries of a task: its status, claim,
// last change and number of reports. AckOutbox compares it with what was
// sent.
func stateVersion(status, claimedAt, claimedVia, updatedAt string, reports int) string {
	return status + "|" + claimedAt + "|" + claimedVia + "|" + updatedAt + "|" + strconv.Itoa(reports)
}

// ownedVersion is stateVersion of task id as it is now, for a task owned
// here for another relay's sender; "" for any other task (gone, or a mirror
// of a task another relay owns: its state changes only by what the owner
// sends, so it has nothing to send back).
func ownedVersion(ctx context.Context, q queryer, id string) (string, error) {
	var (
		status, updated string
		at, via         sql.NullString
		reports         int
		owned           bool
	)
	err := q.QueryRowContext(ctx, `SELECT status, claimed_at, claimed_via, updated_at, (SELECT COUNT(*) FROM reports WHERE task_id = +?),
			EXISTS (SELECT 1 FROM mesh_task_peers WHERE task_id = +? AND side = 'sender')
		FROM tasks WHERE id = ?`, id, id, id).Scan(&status, &at, &via, &updated, &reports, &owned)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !owned {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the state of task %s: %w", id, err)
	}
	return stateVersion(status, at.String, via.String, updated, reports), nil
}

// AckOutbox removes the rows NATS stored (sent, with the rows each
// carried), in one transaction; busy are the rows read and still in
// flight. The trigger that writes a task's state row writes none while one
// is waiting, and a row carries the state it was read with: when a state
// row of a task owned here goes and its task's state is neither the one
// carried by the last row of the task read (sent or busy) nor left to a
// row not read yet, a state row is written again, under a new message id
// and number, so the change is sent. A task another relay owns gets none:
// its mirror changes only by what the owner sent (the trigger writes it no
// state row either).
func (m *Mesh) AckOutbox(ctx context.Context, sent []relay.OutboxItem, busy []relay.OutboxItem) error {
	if len(sent) == 0 {
		return nil
	}
	read := make([]int64, 0, len(busy)+len(sent))
	latest := map[string]relay.OutboxItem{} // task → the last of its rows read
	for _, rows := range [][]relay.OutboxItem{busy, sent} {
		for _, it := range rows {
			read = append(append(read, it.Seq), it.Merged...)
			if l, ok := latest[it.TaskID]; !ok || it.Seq > l.Seq {
				latest[it.TaskID] = it
			}
		}
	}
	readList, err := json.Marshal(read) // never null: read is made
	if err != nil {
		return fmt.Errorf("delete outbox: %w", err)
	}
	return m.db.write(ctx, "delete outbox", func(t *tx) error {
		for _, it := range sent {
			n := int64(0)
			for _, seq := range append([]int64{it.Seq}, it.Merged...) {
				d, err := t.execCount("delete outbox", `DELETE FROM mesh_outbox WHERE seq = ?`, seq)
				if err != nil {
					return err
				}
				n += d
			}
			if n == 0 || it.Change.Event != nil && len(it.Merged) == 0 {
				continue // gone already, or no state row
			}
			now, err := ownedVersion(t.ctx, t.tx, it.TaskID)
			if err != nil {
				return err
			}
			if now == "" || now == latest[it.TaskID].Version {
				continue
			}
			if _, err := t.exec(`INSERT INTO mesh_outbox (msg_id, to_relay, task_id, created_at)
				SELECT lower(hex(randomblob(16))), ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM mesh_outbox
					WHERE task_id = ? AND seq NOT IN (SELECT value FROM json_each(?)))`,
				it.ToRelay, it.TaskID, t.ts, it.TaskID, string(readList)); err != nil {
				return fmt.Errorf("queue the task's new state: %w", err)
			}
		}
		return nil
	})
}

// OutboxHead is the seq of the newest outbox row ever written (0 for none):
// a row added since a look has a greater one. It is what the writer read
// in its last commit (commits.go), read from the database only before the
// first commit or after that read failed.
func (m *Mesh) OutboxHead(ctx context.Context) (int64, error) {
	if head := m.db.outboxHead.Load(); head >= 0 {
		return head, nil
	}
	var head int64
	if err := m.db.r.QueryRowContext(ctx, `SELECT `+outboxHeadSQL).Scan(&head); err != nil {
		return 0, fmt.Errorf("read outbox head: %w", err)
	}
	return head, nil
}

// OutboxDepth counts outbox rows not yet published.
func (m *Mesh) OutboxDepth(ctx context.Context) (int, error) {
	var n int
	if err := m.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM mesh_outbox`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count outbox: %w", err)
	}
	return n, nil
}

// remoteIDs gives a task the ids relay to knows it and its parent and
// conversation by: a task it sent here may be stored under an id of this
// relay's (mesh_ids.go), and goes back under its own.
func remoteIDs(ctx context.Context, q queryer, task relay.Task, to string) (relay.Task, error) {
	own := task.ID
	for _, id := range []*string{&task.ID, &task.ParentTaskID, &task.ConversationID} {
		if *id == "" {
			continue
		}
		if *id == own && id != &task.ID {
			*id = task.ID // the task's own id, looked up already
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
