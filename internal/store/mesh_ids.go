package store

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ids scoped to their relay. Another relay's task ids, parent and
// conversation ids and report ids are its own: each is looked up as (that
// relay, its id), so an id one relay sends never reaches a task another
// relay (or this one) has under the same id.

// peerTask finds the task relay from knows by id: the local id of the task
// it sent here or this relay sent it, and which side of it the relay is
// (sender or owner). found is false for a task it never told this relay of.
func (t *tx) peerTask(from, id string) (local, side string, found bool, err error) {
	err = t.tx.QueryRowContext(t.ctx, `SELECT task_id, side FROM mesh_task_peers WHERE relay_id = ? AND remote_id = ?`, from, id).Scan(&local, &side)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("find task peer: %w", err)
	}
	return local, side, true, nil
}

// taskPeer is what this relay keeps of a task another relay is party to.
type taskPeer struct {
	local, side string
	// last is the number of the last message of the task applied from
	// that relay (0: none yet; -1: unknown, a task that crossed before
	// messages were numbered).
	last int64
	// mark is the task's signature mark, "" when none is kept.
	mark string
}

// peerTaskSeq is peerTask with the number of the last message of the task
// applied from relay from, and the task's mark.
func (t *tx) peerTaskSeq(from, id string) (taskPeer, bool, error) {
	var p taskPeer
	var mark sql.NullString
	err := t.tx.QueryRowContext(t.ctx, `SELECT task_id, side, in_seq, (SELECT mark FROM mesh_tasks m WHERE m.task_id = p.task_id)
		FROM mesh_task_peers p WHERE relay_id = ? AND remote_id = ?`, from, id).Scan(&p.local, &p.side, &p.last, &mark)
	if errors.Is(err, sql.ErrNoRows) {
		return taskPeer{}, false, nil
	}
	if err != nil {
		return taskPeer{}, false, fmt.Errorf("find task peer: %w", err)
	}
	p.mark = mark.String
	return p, true, nil
}

// peerTaskOf is the local id of the task relay from knows as id, nil when
// there is none (or id is "").
func (t *tx) peerTaskOf(from, id string) (any, error) {
	if id == "" {
		return nil, nil
	}
	local, _, found, err := t.peerTask(from, id)
	if err != nil || !found {
		return nil, err
	}
	return local, nil
}

// takenRefusal refuses a change about task id, which a task here has, from
// a relay that is no party to it.
func (t *tx) takenRefusal(id, from string) (*relay.MeshRefusal, error) {
	var peer, side string
	err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id, side FROM mesh_task_peers WHERE task_id = ?`, id).Scan(&peer, &side)
	if errors.Is(err, sql.ErrNoRows) {
		return &relay.MeshRefusal{Reason: "local-task", Detail: fmt.Sprintf("task %s never crossed to relay %s", id, from)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find task peer: %w", err)
	}
	return &relay.MeshRefusal{Reason: side, Detail: fmt.Sprintf("task %s: only its %s relay %s may change it, not %s", id, side, peer, from)}, nil
}

// remoteConversationOf is the conversation column of a task relay from
// sent in its conversation conv: the local task that conversation started
// from, if from told this relay of it; conv if it is from's here; else an
// id made from both, from's own here. A conversation whose first task is
// not here is the relay's that named it first (mesh_conversations). So
// another relay's task never joins a conversation that is not its own, nor
// one that started here, whose tasks a run of its task could read and
// change; and a relay that names another's conversation first (its id
// learnt from a hand-off) takes it from no one: each relay's tasks in it
// keep together under an id of their own.
func (t *tx) remoteConversationOf(from, conv string) (any, error) {
	if local, err := t.peerTaskOf(from, conv); err != nil || local != nil {
		return local, err
	}
	for _, id := range []string{conv, derivedID(from, conv)} {
		if mine, err := t.relaysConversation(from, id); err != nil || mine {
			return id, err
		}
	}
	return nil, nil
}

// relaysConversation reports whether conversation conv is relay from's
// here: recorded as its, or new here, when it is recorded as its.
func (t *tx) relaysConversation(from, conv string) (bool, error) {
	var owner string
	err := t.tx.QueryRowContext(t.ctx, `SELECT relay_id FROM mesh_conversations WHERE conversation_id = ?`, conv).Scan(&owner)
	switch {
	case err == nil:
		return owner == from, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("find conversation %s: %w", conv, err)
	}
	if taken, err := t.conversationHere(conv); err != nil || taken {
		return false, err
	}
	if _, err := t.exec(`INSERT INTO mesh_conversations (conversation_id, relay_id) VALUES (?, ?)`, conv, from); err != nil {
		return false, fmt.Errorf("record conversation %s of relay %s: %w", conv, from, err)
	}
	return true, nil
}

// conversationHere reports whether a task here has id conv or is in the
// conversation of that id.
func (t *tx) conversationHere(conv string) (bool, error) {
	return exists(t.ctx, t.tx, "conversation "+conv, `SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?)
		OR EXISTS (SELECT 1 FROM tasks WHERE conversation_id = ?)`, conv, conv)
}

// keepConversations records, before the finished tasks last changed by
// cutoff are pruned, the relay of each that started a conversation here
// which goes on without it (a hand-off of it is kept), so that relay's next
// task in it still joins it; and forgets the conversations left with no
// task.
func (t *tx) keepConversations(cutoff string) error {
	_, err := t.exec(`INSERT OR IGNORE INTO mesh_conversations (conversation_id, relay_id)
		SELECT r.id, p.relay_id FROM tasks r JOIN mesh_task_peers p ON p.task_id = r.id AND p.side = 'sender'
		WHERE r.status IN ('completed', 'cancelled') AND r.updated_at <= ? AND r.conversation_id IS NULL
			AND EXISTS (SELECT 1 FROM tasks c WHERE c.conversation_id = r.id
				AND NOT (c.status IN ('completed', 'cancelled') AND c.updated_at <= ?))`, cutoff, cutoff)
	if err != nil {
		return fmt.Errorf("keep conversations of pruned tasks: %w", err)
	}
	if _, err := t.exec(`DELETE FROM mesh_conversations WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE conversation_id = mesh_conversations.conversation_id
		AND NOT (status IN ('completed', 'cancelled') AND updated_at <= ?))`, cutoff); err != nil {
		return fmt.Errorf("forget pruned conversations: %w", err)
	}
	return nil
}

// copyReports appends the reports of a remote task to local task taskID
// that are not on its timeline yet (reportID: each is copied once), and
// returns those it added, as stored and in their timeline order: the
// transaction knows the task's new timeline without reading it back.
func (t *tx) copyReports(taskID string, reports []relay.Report) ([]relay.Report, error) {
	var added []relay.Report
	for _, r := range reports {
		switch r.Kind {
		case relay.ReportProgress, relay.ReportCompleted, relay.ReportBlocked, relay.ReportChanges:
		default:
			continue
		}
		id, err := t.reportID(taskID, r.ID)
		if err != nil {
			return nil, err
		}
		n, err := t.execCount("copy report", `INSERT INTO reports (id, task_id, kind, message, result, created_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, id, taskID, r.Kind, r.Message, nullString(r.Result), r.CreatedAt)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			added = append(added, relay.Report{ID: id, Kind: r.Kind, Message: r.Message, Result: r.Result, CreatedAt: r.CreatedAt})
		}
	}
	return added, nil
}

// reportID is the id a remote report of local task taskID is stored under:
// its own when it is a UUID no other task's report has, else a UUID made
// from both (the same each time the report arrives).
func (t *tx) reportID(taskID, remoteID string) (string, error) {
	if id, err := relay.TaskID("reportId", remoteID); err == nil {
		var owner string
		err := t.tx.QueryRowContext(t.ctx, `SELECT task_id FROM reports WHERE id = ?`, id).Scan(&owner)
		switch {
		case errors.Is(err, sql.ErrNoRows), err == nil && owner == taskID:
			return id, nil
		case err != nil:
			return "", fmt.Errorf("find report: %w", err)
		}
	}
	return derivedID(taskID, remoteID), nil
}

// derivedID is a UUID made from scope and id, the same each time: an id
// of another's kept apart from the same id in another scope.
func derivedID(scope, id string) string {
	sum := sha256.Sum256([]byte(scope + "/" + id))
	h := hex.EncodeToString(sum[:16])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
